/* A C99 program that uses a kernel pack only through dlopen, as a customer's program would.
 * tests/e2e/pack_test.cc compiles and runs it and checks what it prints.
 *
 *   pack_client LIB WRAPPER OP:LO-HI[,LO-HI...] [--no-device]
 *
 * Prints, one per line:
 *   abi N
 *   manifest JSON
 *   select OP V1 [V2 ...] = K        for every value tuple of the ranges (cross product)
 *   check NAME = CODE | MESSAGE       for the argument checks below (CODE as returned)
 * With --no-device (only on a machine without a GPU) it also launches with well-formed
 * arguments, which must report DIETCODE_ERR_NO_DEVICE.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*abi_fn)(void);
typedef const char* (*text_fn)(void);
typedef int (*select_fn)(const char*, const int64_t*, int);
typedef int (*launch_fn)(const char*, void* const*, int, const int64_t*, int, void*);
typedef int (*wrapper_fn)(const float*, const float*, float*, int64_t, void*);

static text_fn last_error;

static void check(const char* name, int code) {
  printf("check %s = %d | %s\n", name, code, last_error());
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIB WRAPPER OP:LO-HI[,LO-HI...] [--no-device]\n", argv[0]);
    return 2;
  }
  void* pack = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!pack) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  abi_fn abi = (abi_fn)dlsym(pack, "dietcode_abi_version");
  text_fn manifest = (text_fn)dlsym(pack, "dietcode_manifest");
  select_fn select = (select_fn)dlsym(pack, "dietcode_select");
  launch_fn launch = (launch_fn)dlsym(pack, "dietcode_launch");
  wrapper_fn wrapper = (wrapper_fn)dlsym(pack, argv[2]);
  last_error = (text_fn)dlsym(pack, "dietcode_last_error");
  if (!abi || !manifest || !select || !launch || !last_error || !wrapper) {
    fprintf(stderr, "missing symbols\n");
    return 1;
  }
  printf("abi %d\n", abi());
  printf("manifest %s\n", manifest());

  /* OP:LO-HI,LO-HI */
  char op[128];
  const char* spec = argv[3];
  const char* colon = strchr(spec, ':');
  if (!colon || colon - spec >= (long)sizeof op) return 2;
  memcpy(op, spec, (size_t)(colon - spec));
  op[colon - spec] = 0;
  int64_t lo[4], hi[4], v[4];
  int n = 0;
  const char* p = colon + 1;
  while (*p && n < 4) {
    char* end;
    lo[n] = strtoll(p, &end, 10);
    hi[n] = strtoll(end + 1, &end, 10);
    v[n] = lo[n];
    ++n;
    p = *end == ',' ? end + 1 : end;
  }
  for (;;) {
    int k = select(op, v, n);
    printf("select %s", op);
    for (int i = 0; i < n; ++i) printf(" %lld", (long long)v[i]);
    printf(" = %d\n", k);
    int i = n - 1;
    while (i >= 0 && v[i] == hi[i]) v[i] = lo[i], --i;
    if (i < 0) break;
    ++v[i];
  }

  int64_t good[4] = {1, 1, 1, 1}, zero[4] = {1, 0, 1, 1};
  check("select_null_op", select(NULL, good, n));
  check("select_unknown_op", select("no_such_op", good, n));
  check("select_wrong_count", select(op, good, n + 1));
  check("select_null_values", select(op, NULL, n));
  check("select_value_below_1", select(op, zero + (n == 1 ? 1 : 0), n));

  /* 256-byte aligned fake device pointers, 16 MiB apart (an output may not overlap an input):
   * never dereferenced before the driver check. */
  void* fake = (void*)(uintptr_t)0x100000;
  void* fake2 = (void*)(uintptr_t)0x1100000;
  void* fake3 = (void*)(uintptr_t)0x2100000;
  void* args[4] = {fake, fake2, fake3, (void*)(uintptr_t)0x3100000};
  void* with_null[4] = {fake, NULL, fake, fake};
  int n_args = 3; /* the test's op has X, W, Y */
  check("launch_null_op", launch(NULL, args, n_args, good, n, NULL));
  check("launch_unknown_op", launch("no_such_op", args, n_args, good, n, NULL));
  check("launch_null_args", launch(op, NULL, n_args, good, n, NULL));
  check("launch_null_pointer", launch(op, with_null, n_args, good, n, NULL));
  check("launch_wrong_arg_count", launch(op, args, n_args + 1, good, n, NULL));
  check("launch_value_below_1", launch(op, args, n_args, zero + (n == 1 ? 1 : 0), n, NULL));
  check("launch_misaligned", launch(op, (void* [4]){(char*)fake + 2, fake, fake, fake}, n_args,
                                    good, n, NULL));
  check("wrapper_null_pointer", wrapper(NULL, fake, fake, 7, NULL));
  if (argc > 4 && strcmp(argv[4], "--no-device") == 0) {
    check("launch_no_device", launch(op, args, n_args, good, n, NULL));
    check("wrapper_no_device", wrapper(fake, fake2, fake3, 7, NULL));
  }
  return 0;
}
