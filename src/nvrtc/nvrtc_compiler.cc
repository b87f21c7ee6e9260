#include "nvrtc/nvrtc_compiler.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "nvrtc/ptxas_report.h"

#ifndef DIETCODE_CUDA_INCLUDE_DIR
#define DIETCODE_CUDA_INCLUDE_DIR ""
#endif

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// A program handle that is destroyed on every path out, exceptions included.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  // The reported size counts a terminating NUL, and ptxas' part sometimes brings its own.
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

[[noreturn]] void broken(const std::string& what, nvrtcResult status) {
  throw EnvironmentError(
      fmt::format("NVRTC is not usable: {} failed with {}", what, nvrtcGetErrorString(status)));
}

// Splits "a:b" (how CMake hands over a list of folders) into its non-empty parts.
std::vector<std::string> split_dirs(const std::string& joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= joined.size()) {
    size_t end = joined.find(':', start);
    if (end == std::string::npos) end = joined.size();
    if (end > start) out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// One nvrtcCompileProgram for one -arch. Returns false on a compile error (the log says why).
struct ArchCompile {
  bool ok = false;
  std::string log;
  std::string cubin;
  std::string ptx;
  double seconds = 0;
};

ArchCompile compile_once(const CompileRequest& request, const std::vector<std::string>& fixed,
                         const std::string& arch, bool want_cubin, bool want_ptx) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  ArchCompile out;
  Program program;
  std::string name = request.name.empty() ? "kernel.cu" : request.name;
  nvrtcResult status = nvrtcCreateProgram(&program.handle, request.source.c_str(), name.c_str(), 0,
                                          nullptr, nullptr);
  if (status != NVRTC_SUCCESS) broken("nvrtcCreateProgram", status);

  std::vector<std::string> options = request.options;
  options.push_back("-arch=" + arch);
  options.insert(options.end(), fixed.begin(), fixed.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  status = nvrtcCompileProgram(program.handle, int(argv.size()), argv.data());
  out.log = program_log(program.handle);
  if (status == NVRTC_ERROR_COMPILATION || status == NVRTC_ERROR_INVALID_OPTION) {
    // The candidate's fault, not the machine's: a result, deterministic for the same input.
    out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return out;
  }
  if (status != NVRTC_SUCCESS) broken("compiling " + name + " for " + arch, status);

  if (want_cubin) {
    size_t size = 0;
    status = nvrtcGetCUBINSize(program.handle, &size);
    if (status != NVRTC_SUCCESS) broken("nvrtcGetCUBINSize", status);
    out.cubin.resize(size);
    if (size && (status = nvrtcGetCUBIN(program.handle, out.cubin.data())) != NVRTC_SUCCESS)
      broken("nvrtcGetCUBIN", status);
  }
  if (want_ptx) {
    size_t size = 0;
    status = nvrtcGetPTXSize(program.handle, &size);
    if (status != NVRTC_SUCCESS) broken("nvrtcGetPTXSize", status);
    out.ptx.resize(size);
    if (size && (status = nvrtcGetPTX(program.handle, out.ptx.data())) != NVRTC_SUCCESS)
      broken("nvrtcGetPTX", status);
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  out.ok = true;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

void append_log(std::string& log, const std::string& arch, const std::string& text) {
  if (text.empty()) return;
  log += "-arch=" + arch + ":\n" + text;
  if (log.back() != '\n') log += '\n';
}

}  // namespace

bool parse_arch(const std::string& arch, int* number, std::string* suffix) {
  if (arch.rfind("sm_", 0) != 0) return false;
  size_t pos = 3, digits_end = pos;
  while (digits_end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits_end])))
    ++digits_end;
  if (digits_end == pos || digits_end - pos > 4) return false;
  std::string rest = arch.substr(digits_end);
  if (!rest.empty() && rest != "a" && rest != "f") return false;
  *number = std::stoi(arch.substr(pos, digits_end - pos));
  *suffix = rest;
  return true;
}

std::string NvrtcCompiler::version() {
  int major = 0, minor = 0;
  nvrtcResult status = nvrtcVersion(&major, &minor);
  if (status != NVRTC_SUCCESS) broken("nvrtcVersion", status);
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> NvrtcCompiler::supported_archs() {
  int count = 0;
  nvrtcResult status = nvrtcGetNumSupportedArchs(&count);
  if (status != NVRTC_SUCCESS) broken("nvrtcGetNumSupportedArchs", status);
  std::vector<int> archs(count);
  if (count && (status = nvrtcGetSupportedArchs(archs.data())) != NVRTC_SUCCESS)
    broken("nvrtcGetSupportedArchs", status);
  return archs;
}

std::vector<std::string> NvrtcCompiler::default_include_dirs() {
  std::vector<std::string> candidates = split_dirs(DIETCODE_CUDA_INCLUDE_DIR);
  // A pack built on one host may be tuned on another whose toolkit sits in the usual place.
  candidates.push_back("/usr/local/cuda/include");
  std::vector<std::string> out;
  auto add = [&out](const fs::path& dir) {
    std::error_code ec;
    std::string text = dir.lexically_normal().string();
    if (fs::is_directory(dir, ec) && std::find(out.begin(), out.end(), text) == out.end())
      out.push_back(text);
  };
  for (const std::string& dir : candidates) {
    add(dir);
    add(fs::path(dir) / "cccl");  // cuda/pipeline, cuda/barrier and friends live here
  }
  return out;
}

NvrtcCompiler::NvrtcCompiler() : NvrtcCompiler(default_include_dirs()) {}

NvrtcCompiler::NvrtcCompiler(std::vector<std::string> include_dirs)
    : include_dirs_(std::move(include_dirs)) {
  version();  // fail here, with a clear message, rather than on the first candidate
}

std::string NvrtcCompiler::fingerprint() const {
  // nvrtcVersion says only major.minor; the library's size tells patch releases apart.
  std::string library = "libnvrtc";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
    struct stat st {};
    if (stat(info.dli_fname, &st) == 0)
      library = fmt::format("{} {} bytes", fs::path(info.dli_fname).filename().string(),
                            static_cast<long long>(st.st_size));
  }
  std::string out = "nvrtc " + version() + " (" + library + ")";
  for (const std::string& dir : include_dirs_) out += " -I" + dir;
  return out;
}

CompileResult NvrtcCompiler::compile(const CompileRequest& request) {
  if (request.archs.empty())
    throw std::invalid_argument("compile request " + request.name + " names no architecture");
  std::vector<int> supported = supported_archs();
  int newest = 0;
  for (const std::string& arch : request.archs) {
    int number = 0;
    std::string suffix;
    if (!parse_arch(arch, &number, &suffix) ||
        std::find(supported.begin(), supported.end(), number) == supported.end()) {
      std::string list;
      for (int a : supported) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
      throw UserError(fmt::format("unsupported GPU architecture '{}': NVRTC {} compiles for {}",
                                  arch, version(), list));
    }
    newest = std::max(newest, number);
  }

  std::vector<std::string> fixed = {"--ptxas-options=-v"};
  for (const std::string& dir : include_dirs_) fixed.push_back("-I" + dir);

  CompileResult result;
  // The PTX of a plain sm_XX compile is the compute_XX PTX, so when the newest arch is
  // requested without a suffix its compile provides the PTX and saves a front-end pass.
  std::string ptx_from = request.want_ptx ? "sm_" + std::to_string(newest) : "";
  bool ptx_done = false;
  for (const std::string& arch : request.archs) {
    bool take_ptx = !ptx_done && arch == ptx_from;
    ArchCompile c = compile_once(request, fixed, arch, /*want_cubin=*/true, take_ptx);
    result.seconds += c.seconds;
    append_log(result.log, arch, c.log);
    if (!c.ok) return result;  // later archs would fail the same way; ok stays false
    ArchBinary binary;
    binary.arch = arch;
    binary.cubin = std::move(c.cubin);
    binary.resources = entry_resources(parse_ptxas_report(c.log));
    result.binaries.push_back(std::move(binary));
    if (take_ptx) {
      result.ptx = std::move(c.ptx);
      ptx_done = true;
    }
  }
  if (request.want_ptx) {
    result.ptx_arch = "compute_" + std::to_string(newest);
    if (!ptx_done) {
      ArchCompile c = compile_once(request, fixed, result.ptx_arch, /*want_cubin=*/false, true);
      result.seconds += c.seconds;
      append_log(result.log, result.ptx_arch, c.log);
      if (!c.ok) return result;
      result.ptx = std::move(c.ptx);
    }
  }
  result.ok = true;
  return result;
}

}  // namespace dietcode
