// x86_launch_overhead: what dietcode_launch on a CPU pack costs over calling the kernel it
// dispatches to directly. Not a test: it asserts nothing and prints figures.
//
//   x86_launch_overhead PACK.so WORKLOAD.json OP [--threads N] [--calls N] [--rounds N]
//
// At the op's smallest instance (every shape variable at its minimum) it asks the pack which
// kernel it runs (dietcode_select), builds that same kernel from the pack's manifest (template
// and tunables) with the same compiler and flags, and times, in alternating rounds, `calls`
// back-to-back dietcode_launch calls against `calls` direct calls of the kernel on a thread
// pool of the same size. Both run the same code on the same data; the difference is the
// pack's argument checks, dispatch tree, pool lookup and error handling. Dense ops only.
// Pick an op whose smallest instance runs in a few microseconds, so the difference is not
// lost in the kernel's own noise.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "space/templates.h"
#include "workload/workload.h"
#include "x86/cpu_thread_pool.h"
#include "x86/cxx_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;
using LaunchFn = int (*)(const char*, void* const*, int, const int64_t*, int, void*);
using SelectFn = int (*)(const char*, const int64_t*, int);
using ManifestFn = const char* (*)();
using SetThreadsFn = int (*)(int);
using ErrorFn = const char* (*)();

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "x86_launch_overhead: %s\n", what.c_str());
  std::exit(1);
}

template <typename F>
F symbol(void* lib, const char* name) {
  void* p = ::dlsym(lib, name);
  if (!p) die(std::string("the pack exports no ") + name);
  return reinterpret_cast<F>(p);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) die("usage: x86_launch_overhead PACK.so WORKLOAD.json OP [--threads N] [--calls N] [--rounds N]");
  const std::string pack_path = argv[1], workload_path = argv[2], op_name = argv[3];
  int threads = 1, calls = 2000, rounds = 31;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--threads") threads = v;
    else if (flag == "--calls") calls = v;
    else if (flag == "--rounds") rounds = v;
    else die("unknown option " + flag);
  }

  using namespace dietcode;
  const Workload workload = load_workload(workload_path);
  const OpSpec* op = workload.find_op(op_name);
  if (!op) die("the workload has no op " + op_name);
  if (op->kind != OpKind::kDense) die("only dense ops are supported");
  std::vector<int64_t> values;
  for (const std::string& v : op->vars) values.push_back(workload.find_var(v)->min());
  const auto dims = evaluate_dims(*op, values);
  const int64_t M = dims.at("M"), N = dims.at("N"), K = dims.at("K");

  void* lib = ::dlopen(pack_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) die(std::string("cannot load the pack: ") + ::dlerror());
  auto launch = symbol<LaunchFn>(lib, "dietcode_launch");
  auto select = symbol<SelectFn>(lib, "dietcode_select");
  auto last_error = symbol<ErrorFn>(lib, "dietcode_last_error");
  symbol<SetThreadsFn>(lib, "dietcode_set_num_threads")(threads);
  const int index = select(op_name.c_str(), values.data(), int(values.size()));
  if (index < 0) die(std::string("dietcode_select: ") + last_error());

  // The kernel the pack runs, rebuilt from its manifest entry.
  const auto manifest = nlohmann::json::parse(symbol<ManifestFn>(lib, "dietcode_manifest")());
  nlohmann::json kernel;
  for (const auto& o : manifest["ops"])
    if (o["name"] == op_name) kernel = o["kernels"][size_t(index)];
  MicroKernel mk;
  mk.tmpl = kernel["template"].get<std::string>();
  for (const auto& [k, v] : kernel["params"].items()) mk.params[k] = v.get<int>();
  const GeneratedKernel g = generate_cpu_kernel(*op, mk);
  CxxCompiler cxx;
  CompileRequest request;
  request.name = "direct.cc";
  request.source = g.source;
  request.options = g.options;
  request.archs = {x86_isa_level(mk.tmpl)};
  request.want_ptx = false;
  const CompileResult compiled = cxx.compile(request);
  if (!compiled.ok || compiled.binaries.empty()) die("compiling the kernel failed:\n" + compiled.log);
  const std::string so = "/tmp/x86_launch_overhead_" + std::to_string(::getpid()) + ".so";
  std::ofstream(so, std::ios::binary) << compiled.binaries[0].cubin;
  void* direct_lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::unlink(so.c_str());
  if (!direct_lib) die(std::string("cannot load the rebuilt kernel: ") + ::dlerror());
  auto kernel_fn = reinterpret_cast<DietcodeCpuKernelFn>(::dlsym(direct_lib, g.plan.entry.c_str()));
  if (!kernel_fn) die("the rebuilt kernel exports no " + g.plan.entry);

  // Operands, 64-byte aligned like any allocator's large blocks.
  auto buffer = [](int64_t floats) {
    float* p = static_cast<float*>(std::aligned_alloc(64, size_t((floats * 4 + 63) / 64 * 64)));
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < floats; ++i) p[i] = u(rng);
    return p;
  };
  float *x = buffer(M * K), *w = buffer(N * K), *bias = buffer(N), *y = buffer(M * N);
  std::vector<void*> args = {x, w};
  if (epilogue_has_bias(op->epilogue)) args.push_back(bias);
  args.push_back(y);
  DietcodeArgs a{};
  a.a = x, a.b = w, a.c = y, a.bias = epilogue_has_bias(op->epilogue) ? bias : nullptr;
  a.batch = 1, a.m = M, a.n = N, a.k = K;
  CpuThreadPoolOptions pool_options;
  pool_options.threads = threads;
  CpuThreadPool pool(pool_options);
  const DietcodeCpuRuntime rt = pool.runtime();

  auto time_pack = [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      if (launch(op_name.c_str(), args.data(), int(args.size()), values.data(), int(values.size()), nullptr))
        die(std::string("dietcode_launch: ") + last_error());
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
  };
  auto time_direct = [&] {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      if (kernel_fn(&a, &rt)) die("the kernel refused the problem");
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
  };
  time_pack(), time_direct();  // warm up: the pack's pool, scratch buffers, caches
  std::vector<double> pack_us, direct_us, diff_us;
  for (int r = 0; r < rounds; ++r) {
    double p, d;
    if (r % 2) p = time_pack(), d = time_direct();
    else d = time_direct(), p = time_pack();
    pack_us.push_back(p), direct_us.push_back(d), diff_us.push_back(p - d);
  }
  std::string shape;
  for (size_t i = 0; i < values.size(); ++i)
    shape += (i ? " " : "") + op->vars[i] + "=" + std::to_string(values[i]);
  std::printf("op %s at %s (M=%lld N=%lld K=%lld), kernel %d %s, %d thread(s)\n", op_name.c_str(),
              shape.c_str(), (long long)M, (long long)N, (long long)K, index, mk.key().c_str(), threads);
  std::printf("  %d rounds of %d calls each, alternating; per call, median over rounds (min..max):\n",
              rounds, calls);
  auto line = [](const char* what, const std::vector<double>& v) {
    std::printf("  %-28s %8.3f us  (%.3f..%.3f)\n", what, median(v), *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  };
  line("dietcode_launch", pack_us);
  line("kernel called directly", direct_us);
  line("difference (launch - direct)", diff_us);
  return 0;
}
