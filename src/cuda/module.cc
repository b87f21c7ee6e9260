#include "cuda/module.h"

#include <cstdint>
#include <utility>

#include "cuda/driver.h"

namespace dietcode {

namespace {

// The JIT log as one line, so the error stays one line on the terminal.
std::string one_line(const char* log) {
  std::string text;
  for (const char* c = log; *c; ++c) {
    if (*c == '\n') {
      if (!text.empty() && c[1]) text += "; ";
    } else {
      text += *c;
    }
  }
  return text;
}

}  // namespace

Module::Module(const std::string& image, const std::string& what) : what_(what) {
  char log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log) - 1))};
  // image.c_str() is NUL-terminated, which the driver needs to tell PTX text apart.
  CUresult rc = driver().cuModuleLoadDataEx(&module_, image.c_str(), 2, options, values);
  if (rc != CUDA_SUCCESS) {
    module_ = nullptr;
    std::string where = "cuModuleLoadDataEx(" + what + ")";
    try {
      throw_cuda_error(rc, where.c_str());
    } catch (const CudaError& e) {
      std::string detail = one_line(log);
      if (detail.empty()) throw;
      throw CudaError(rc, std::string(e.what()) + ": " + detail);
    }
  }
}

Module::~Module() { unload(); }

Module::Module(Module&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)), what_(std::move(other.what_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    unload();
    module_ = std::exchange(other.module_, nullptr);
    what_ = std::move(other.what_);
  }
  return *this;
}

CUfunction Module::function(const std::string& entry) const {
  CUfunction kernel = nullptr;
  std::string where = "cuModuleGetFunction(" + what_ + ", " + entry + ")";
  check(driver().cuModuleGetFunction(&kernel, module_, entry.c_str()), where.c_str());
  return kernel;
}

void Module::unload() noexcept {
  if (!module_) return;
  if (const Driver* d = driver_or_null()) d->cuModuleUnload(module_);
  module_ = nullptr;
}

void set_max_dynamic_smem(CUfunction kernel, int bytes) {
  check(driver().cuFuncSetAttribute(kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

int function_attribute(CUfunction kernel, CUfunction_attribute attribute) {
  int value = 0;
  check(driver().cuFuncGetAttribute(&value, attribute, kernel), "cuFuncGetAttribute");
  return value;
}

}  // namespace dietcode
