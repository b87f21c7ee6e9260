/* run_pack: load a dietcode kernel pack with dlopen, run one of its ops (on the GPU for a GPU
 * pack, on the host for a CPU pack) and check the result against a reference computed here.
 * Plain C99; needs neither the pack's header nor libcuda at build time (the driver is
 * dlopen'ed too, as the pack itself does, and only for a GPU pack).
 *
 *   run_pack libbert_dense.so [OP] [VAR=VALUE ...]      e.g.  run_pack libbert_dense.so qkv T=37
 *
 * OP defaults to the pack's first op, each shape variable to the middle of its tuned range.
 * Exit status: 0 the result matches, 1 it does not or something failed, 77 a GPU pack and no
 * GPU here (the manifest and the dispatcher still work, and are shown).
 *
 * It needs only functions of ABI version 1, so it works with a pack of any version (versions
 * only add: a program checks `dietcode_abi_version() >= N`, never `==`). With a CPU pack of
 * ABI 4 or later it also declares a dense op's weights constant (dietcode_declare_constant):
 * the pack packs them once, at the first launch, and a second launch reads that copy.
 *
 * The manifest is JSON; a few helpers below read the handful of fields this program needs
 * (a real program would use its JSON library, or the pack's header and typed wrappers).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a minimal reader for the manifest's JSON ------------------------------------------ */

static const char* ws(const char* p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') ++p;
  return p;
}

static const char* skip_value(const char* p) {
  p = ws(p);
  if (*p == '"') {
    for (++p; *p && *p != '"'; ++p)
      if (*p == '\\' && p[1]) ++p;
    return *p ? p + 1 : p;
  }
  if (*p == '{' || *p == '[') {
    char open = *p, close = open == '{' ? '}' : ']';
    for (++p, p = ws(p); *p && *p != close;) {
      if (open == '{') p = ws(skip_value(p)) + 1; /* key and ':' */
      p = ws(skip_value(p));
      if (*p == ',') p = ws(p + 1);
    }
    return *p ? p + 1 : p;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']') ++p; /* number, true, false, null */
  return p;
}

/* The value of `key` in the object at `obj`, or NULL. */
static const char* member(const char* obj, const char* key) {
  if (!obj || *(obj = ws(obj)) != '{') return NULL;
  size_t len = strlen(key);
  for (const char* p = ws(obj + 1); *p == '"';) {
    int match = strncmp(p + 1, key, len) == 0 && p[len + 1] == '"';
    p = ws(ws(skip_value(p)) + 1);
    if (match) return p;
    p = ws(skip_value(p));
    if (*p != ',') break;
    p = ws(p + 1);
  }
  return NULL;
}

/* Element i of the array at `arr`, or NULL. */
static const char* element(const char* arr, int i) {
  if (!arr || *(arr = ws(arr)) != '[') return NULL;
  const char* p = ws(arr + 1);
  for (int at = 0; *p && *p != ']'; ++at) {
    if (at == i) return p;
    p = ws(skip_value(p));
    if (*p == ',') p = ws(p + 1);
  }
  return NULL;
}

/* Copies the string at `v` (no escapes in the fields read here) into out. */
static const char* text(const char* v, char* out, size_t size) {
  out[0] = 0;
  if (!v || *(v = ws(v)) != '"') return out;
  size_t n = 0;
  for (++v; *v && *v != '"' && n + 1 < size; ++v) out[n++] = *v;
  out[n] = 0;
  return out;
}

/* ---- shape expressions: "16*T", "B*T + 1", "2304" -------------------------------------- */

static int n_vars;
static char var_name[8][64];
static int64_t var_value[8];

static int64_t evaluate(const char* e) {
  int64_t total = 0, term = 1, sign = 1;
  const char* p = e;
  for (;;) {
    while (*p == ' ') ++p;
    if (isdigit((unsigned char)*p)) {
      char* end;
      term *= strtoll(p, &end, 10);
      p = end;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char* start = p;
      int found = 0;
      while (isalnum((unsigned char)*p) || *p == '_') ++p;
      for (int i = 0; i < n_vars; ++i)
        if (strlen(var_name[i]) == (size_t)(p - start) && !strncmp(var_name[i], start, p - start))
          term *= var_value[i], found = 1;
      if (!found) fprintf(stderr, "unknown variable in '%s'\n", e), exit(1);
    } else {
      fprintf(stderr, "cannot read the dimension '%s'\n", e);
      exit(1);
    }
    while (*p == ' ') ++p;
    if (*p == '*') {
      ++p;
      continue;
    }
    total += sign * term;
    term = 1;
    if (*p != '+' && *p != '-') return total;
    sign = *p++ == '-' ? -1 : 1;
  }
}

/* ---- element types --------------------------------------------------------------------- */

enum { F32, F16, BF16 };

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); /* round to nearest even */
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t to_f16(float f) { /* inputs here are small normal numbers or zero */
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, mant = u & 0x7fffff;
  if (exp < 113) return (uint16_t)sign; /* flush tiny values to zero */
  uint32_t h = sign | ((exp - 112) << 10) | (mant >> 13);
  if (mant & 0x1000) ++h; /* round half up */
  return (uint16_t)h;
}
static float from_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t u = exp ? sign | ((exp + 112) << 23) | (mant << 13) : sign; /* no subnormals */
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Random values rounded to the element type; `raw` gets the bytes to upload. */
static float* fill(int64_t count, int type, void** raw, unsigned* seed) {
  float* values = malloc((size_t)count * sizeof(float));
  *raw = malloc((size_t)count * (type == F32 ? 4 : 2));
  for (int64_t i = 0; i < count; ++i) {
    *seed = *seed * 1664525u + 1013904223u;
    float f = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    if (type == F32) ((float*)*raw)[i] = f;
    if (type == BF16) f = from_bf16(((uint16_t*)*raw)[i] = to_bf16(f));
    if (type == F16) f = from_f16(((uint16_t*)*raw)[i] = to_f16(f));
    values[i] = f;
  }
  return values;
}

static double activate(double v, const char* epilogue) {
  if (strstr(epilogue, "relu")) return v > 0 ? v : 0;
  if (strstr(epilogue, "gelu")) return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  return v;
}

/* ---- the driver, through dlopen + cuGetProcAddress -------------------------------------- */

typedef int (*get_proc_fn)(const char*, void**, int, unsigned long long, int*);
static get_proc_fn get_proc;
static void* driver(const char* name) {
  void* fn = NULL;
  int found = 0;
  if (get_proc(name, &fn, 12000, 0, &found) != 0 || !fn)
    fprintf(stderr, "the driver lacks %s\n", name), exit(1);
  return fn;
}
#define CU(call)                                                    \
  do {                                                              \
    int status_ = (call);                                           \
    if (status_) fprintf(stderr, "%s: CUDA error %d\n", #call, status_), exit(1); \
  } while (0)

/* ---- one launch, on the host or on the GPU ---------------------------------------------- */

typedef int (*launch_fn)(const char*, void* const*, int, const int64_t*, int, void*);

struct Call {
  launch_fn launch;
  const char* (*last_error)(void);
  const char* op;
  const int64_t* values;
  int n_values;
  void *a, *b, *bias, *c; /* host buffers; bias NULL when the op has none */
  size_t a_bytes, b_bytes, bias_bytes, c_bytes;
  /* ABI 4, or NULL: dietcode_declare_constant and dietcode_forget_constant */
  int (*declare_constant)(const char*, int, const void*);
  int (*forget_constant)(const char*, int, const void*);
};

/* A CPU pack: host pointers and a NULL stream; the call returns when the output is written. */
static int run_on_host(const struct Call* c) {
  void* args[4];
  int n_args = 0;
  args[n_args++] = c->a;
  args[n_args++] = c->b;
  if (c->bias) args[n_args++] = c->bias;
  args[n_args++] = c->c;
  /* Weights that stay the same over many launches (argument 1), declared so: the first launch
   * packs them once, the second reads that copy. Forget them before changing or freeing them. */
  int constant = c->declare_constant && c->declare_constant(c->op, 1, c->b) == 0;
  int status = 0;
  for (int launches = constant ? 2 : 1; launches > 0 && !status; --launches)
    status = c->launch(c->op, args, n_args, c->values, c->n_values, NULL);
  if (constant) c->forget_constant(c->op, 1, c->b);
  if (status) return fprintf(stderr, "dietcode_launch: %d: %s\n", status, c->last_error()), 1;
  if (constant) printf("weights declared constant: packed once, read twice\n");
  return 0;
}

/* A GPU pack: the buffers go to the GPU and back. No driver or no GPU: say so (77: skipped). */
static int run_on_gpu(const struct Call* c) {
  /* The driver. No driver or no GPU: say so and stop (77: skipped). */
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    printf("no GPU: libcuda.so.1 cannot be loaded (no NVIDIA driver on this machine); the "
           "manifest and the dispatcher above need none, launching does\n");
    return 77;
  }
  get_proc = (get_proc_fn)dlsym(cuda, "cuGetProcAddress_v2");
  if (!get_proc) return printf("no GPU: the NVIDIA driver is older than CUDA 12\n"), 77;
  int (*cuInit)(unsigned) = (int (*)(unsigned))driver("cuInit");
  int (*cuDeviceGet)(int*, int) = (int (*)(int*, int))driver("cuDeviceGet");
  int (*cuPrimaryCtxRetain)(void**, int) = (int (*)(void**, int))driver("cuDevicePrimaryCtxRetain");
  int (*cuCtxSetCurrent)(void*) = (int (*)(void*))driver("cuCtxSetCurrent");
  int (*cuMemAlloc)(uint64_t*, size_t) = (int (*)(uint64_t*, size_t))driver("cuMemAlloc");
  int (*cuMemFree)(uint64_t) = (int (*)(uint64_t))driver("cuMemFree");
  int (*cuHtoD)(uint64_t, const void*, size_t) =
      (int (*)(uint64_t, const void*, size_t))driver("cuMemcpyHtoD");
  int (*cuDtoH)(void*, uint64_t, size_t) = (int (*)(void*, uint64_t, size_t))driver("cuMemcpyDtoH");
  int (*cuCtxSynchronize)(void) = (int (*)(void))driver("cuCtxSynchronize");
  if (cuInit(0) != 0) return printf("no GPU: cuInit failed (no CUDA-capable device)\n"), 77;
  int device;
  void* ctx;
  CU(cuDeviceGet(&device, 0));
  CU(cuPrimaryCtxRetain(&ctx, device));
  CU(cuCtxSetCurrent(ctx));

  /* The inputs on the GPU. */
  uint64_t d_a, d_b, d_bias = 0, d_c;
  CU(cuMemAlloc(&d_a, c->a_bytes));
  CU(cuMemAlloc(&d_b, c->b_bytes));
  CU(cuMemAlloc(&d_c, c->c_bytes));
  CU(cuHtoD(d_a, c->a, c->a_bytes));
  CU(cuHtoD(d_b, c->b, c->b_bytes));
  if (c->bias) {
    CU(cuMemAlloc(&d_bias, c->bias_bytes));
    CU(cuHtoD(d_bias, c->bias, c->bias_bytes));
  }
  void* args[4];
  int n_args = 0;
  args[n_args++] = (void*)(uintptr_t)d_a;
  args[n_args++] = (void*)(uintptr_t)d_b;
  if (c->bias) args[n_args++] = (void*)(uintptr_t)d_bias;
  args[n_args++] = (void*)(uintptr_t)d_c;
  int status = c->launch(c->op, args, n_args, c->values, c->n_values, NULL);
  if (status) return fprintf(stderr, "dietcode_launch: %d: %s\n", status, c->last_error()), 1;
  CU(cuCtxSynchronize());
  CU(cuDtoH(c->c, d_c, c->c_bytes));
  cuMemFree(d_a);
  cuMemFree(d_b);
  cuMemFree(d_c);
  if (d_bias) cuMemFree(d_bias);
  return 0;

}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s libNAME.so [OP] [VAR=VALUE ...]\n", argv[0]);
    return 1;
  }
  void* pack = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!pack) return fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror()), 1;
  const char* (*manifest)(void) = (const char* (*)(void))dlsym(pack, "dietcode_manifest");
  const char* (*last_error)(void) = (const char* (*)(void))dlsym(pack, "dietcode_last_error");
  int (*select)(const char*, const int64_t*, int) =
      (int (*)(const char*, const int64_t*, int))dlsym(pack, "dietcode_select");
  launch_fn launch = (launch_fn)dlsym(pack, "dietcode_launch");
  if (!manifest || !select || !launch || !last_error)
    return fprintf(stderr, "%s is not a dietcode kernel pack\n", argv[1]), 1;

  const char* m = manifest();
  char name[256], op_name[256], kind[64], dtype[64], epilogue[64], buf[256];
  printf("pack %s, built by dietcode %s for", text(member(m, "name"), name, sizeof name),
         text(member(m, "tool_version"), buf, sizeof buf));
  for (int i = 0; element(member(m, "archs"), i); ++i)
    printf(" %s", text(element(member(m, "archs"), i), buf, sizeof buf));
  printf("\n");

  /* The op: argv[2] unless it is VAR=VALUE, else the first. */
  int arg = 2;
  const char* op = NULL;
  const char* ops = member(m, "ops");
  for (int i = 0; element(ops, i); ++i) {
    text(member(element(ops, i), "name"), op_name, sizeof op_name);
    if (argc > 2 && !strchr(argv[2], '=') ? !strcmp(op_name, argv[2]) : i == 0) {
      op = element(ops, i);
      break;
    }
  }
  if (argc > 2 && !strchr(argv[2], '=')) ++arg;
  if (!op) return fprintf(stderr, "the pack has no op %s\n", argc > 2 ? argv[2] : ""), 1;
  text(member(op, "op"), kind, sizeof kind);
  text(member(op, "dtype"), dtype, sizeof dtype);
  text(member(op, "epilogue"), epilogue, sizeof epilogue);
  int type = !strcmp(dtype, "float32") ? F32 : !strcmp(dtype, "float16") ? F16 : BF16;

  /* Shape values: VAR=VALUE arguments, else the middle of the tuned range. */
  const char* vars = member(op, "vars");
  for (n_vars = 0; element(vars, n_vars) && n_vars < 8; ++n_vars) {
    text(element(vars, n_vars), var_name[n_vars], sizeof var_name[0]);
    for (int i = 0; element(member(m, "shape_vars"), i); ++i) {
      const char* v = element(member(m, "shape_vars"), i);
      if (!strcmp(text(member(v, "name"), buf, sizeof buf), var_name[n_vars]))
        var_value[n_vars] = (atoll(member(v, "min")) + atoll(member(v, "max"))) / 2;
    }
    for (int a = arg; a < argc; ++a) {
      size_t len = strlen(var_name[n_vars]);
      if (!strncmp(argv[a], var_name[n_vars], len) && argv[a][len] == '=')
        var_value[n_vars] = atoll(argv[a] + len + 1);
    }
  }
  printf("op %s (%s %s, epilogue %s) at", op_name, kind, dtype, epilogue);
  for (int i = 0; i < n_vars; ++i) printf(" %s=%lld", var_name[i], (long long)var_value[i]);
  int kernel = select(op_name, var_value, n_vars);
  if (kernel < 0) return fprintf(stderr, "\ndietcode_select: %s\n", last_error()), 1;
  printf(": the dispatcher picks kernel %d\n", kernel);

  const char* dims = member(op, "dims");
  int64_t B = 1, M, N, K;
  if (!strcmp(kind, "dense") || !strcmp(kind, "batch_matmul")) {
    M = evaluate(text(member(dims, "M"), buf, sizeof buf));
    N = evaluate(text(member(dims, "N"), buf, sizeof buf));
    K = evaluate(text(member(dims, "K"), buf, sizeof buf));
    if (!strcmp(kind, "batch_matmul")) B = evaluate(text(member(dims, "B"), buf, sizeof buf));
  } else {
    printf("this example runs dense and batch_matmul ops; %s is not covered\n", kind);
    return 0;
  }
  int transpose_a = member(op, "transpose_a") && *ws(member(op, "transpose_a")) == 't';
  int transpose_b = member(op, "transpose_b") && *ws(member(op, "transpose_b")) == 't';
  int has_bias = strstr(epilogue, "bias") != NULL;

  /* Inputs on the host, rounded to the element type. */
  unsigned seed = 12345;
  size_t elem = type == F32 ? 4 : 2;
  void *raw_a, *raw_b, *raw_bias = NULL;
  float* a = fill(B * M * K, type, &raw_a, &seed);
  float* b = fill(B * N * K, type, &raw_b, &seed);
  float* bias = has_bias ? fill(N, type, &raw_bias, &seed) : NULL;
  void* raw_c = malloc(B * M * N * elem);
  struct Call call = {launch, last_error, op_name, var_value, n_vars, raw_a, raw_b, raw_bias, raw_c,
                      (size_t)(B * M * K * elem), (size_t)(B * N * K * elem),
                      has_bias ? (size_t)(N * elem) : 0, (size_t)(B * M * N * elem), NULL, NULL};
  int (*abi_version)(void) = (int (*)(void))dlsym(pack, "dietcode_abi_version");
  if (abi_version && abi_version() >= 4 && !strcmp(kind, "dense")) {
    call.declare_constant =
        (int (*)(const char*, int, const void*))dlsym(pack, "dietcode_declare_constant");
    call.forget_constant =
        (int (*)(const char*, int, const void*))dlsym(pack, "dietcode_forget_constant");
    if (!call.forget_constant) call.declare_constant = NULL;
  }
  /* A CPU pack ("target": "cpu", ABI 3) takes the host buffers as they are; a GPU pack (no
   * "target" before ABI 3) needs them on the GPU. */
  char target[16];
  int status = !strcmp(text(member(m, "target"), target, sizeof target), "cpu")
                   ? run_on_host(&call)
                   : run_on_gpu(&call);
  if (status) return status;

  /* The reference, in double; the tolerance grows with the size of the sum. */
  int64_t bad = 0;
  double worst = 0, rtol = type == F32 ? 1e-4 : 1e-2;
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t k = 0; k < K; ++k) {
          /* dense: W is [N,K]; batch_matmul: B is [K,N] unless transposed. */
          double x = transpose_a ? a[bi * M * K + k * M + i] : a[bi * M * K + i * K + k];
          double w = !strcmp(kind, "dense") || transpose_b ? b[bi * N * K + j * K + k]
                                                           : b[bi * N * K + k * N + j];
          sum += x * w;
          magnitude += fabs(x * w);
        }
        double want = activate(sum + (bias ? bias[j] : 0.0), epilogue);
        int64_t at = bi * M * N + i * N + j;
        double got = type == F32 ? ((float*)raw_c)[at]
                     : type == BF16 ? from_bf16(((uint16_t*)raw_c)[at])
                                    : from_f16(((uint16_t*)raw_c)[at]);
        double ratio = fabs(got - want) / (rtol * (fabs(want) + magnitude / sqrt((double)K)) + 1e-30);
        if (ratio > worst) worst = ratio;
        if (ratio > 1 && bad++ == 0)
          printf("mismatch at [%lld,%lld,%lld]: got %g, want %g\n", (long long)bi, (long long)i,
                 (long long)j, got, want);
      }
  printf("%s: %lld x %lld x %lld (batch %lld), %lld mismatches, worst error %.3f of the "
         "tolerance\n", bad ? "FAILED" : "OK", (long long)M, (long long)N, (long long)K,
         (long long)B, (long long)bad, worst);
  return bad ? 1 : 0;
}
