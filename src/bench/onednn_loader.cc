#include "bench/onednn_loader.h"

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <mutex>

#include "bench/dl_library.h"
#include "common/error.h"

namespace dietcode {

namespace {

constexpr const char* kInstallHint =
    "install the Debian package libdnnl2 (or set DIETCODE_ONEDNN_LIBRARY)";

// fn from the library, or false with *why naming what is missing.
template <typename Fn>
bool resolve(void* handle, const std::string& path, const char* name, Fn& fn, std::string* why) {
  if (dlsym_into(handle, name, fn)) return true;
  *why = "no oneDNN: " + path + " has no " + name +
         " (dietcode needs the oneDNN 2.x C API, libdnnl.so.2; " + kInstallHint + ")";
  return false;
}

}  // namespace

std::string OnednnApi::label() const {
  return "oneDNN " + std::to_string(version.major) + "." + std::to_string(version.minor) + "." +
         std::to_string(version.patch);
}

std::string OnednnApi::effective_isa() const {
  if (!dnnl_get_effective_cpu_isa) return "";
  // dnnl_cpu_isa_t of oneDNN 2.x: each value is a bit set of its predecessors' features.
  static const std::pair<int, const char*> kNames[] = {
      {0x1, "sse41"},           {0x3, "avx"},
      {0x7, "avx2"},            {0x407, "avx2_vnni"},
      {0xf, "avx512_mic"},      {0x1f, "avx512_mic_4ops"},
      {0x27, "avx512_core"},    {0x67, "avx512_core_vnni"},
      {0xe7, "avx512_core_bf16"}, {0x3e7, "avx512_core_amx"}};
  const int isa = dnnl_get_effective_cpu_isa();
  for (const auto& [value, name] : kNames)
    if (value == isa) return name;
  char hex[32];
  std::snprintf(hex, sizeof hex, "dnnl_cpu_isa_t 0x%x", unsigned(isa));
  return hex;
}

std::vector<std::string> onednn_candidates() {
  const char* env = std::getenv("DIETCODE_ONEDNN_LIBRARY");
  if (env && *env) return {env};
  return {"libdnnl.so.2"};
}

bool load_onednn(const std::vector<std::string>& files, OnednnApi* out, std::string* why) {
  OnednnApi api;
  void* h = dlopen_first(files, &api.path, why);
  if (!h) {
    *why = "no oneDNN: " + *why + "; " + kInstallHint;
    return false;
  }
  const std::string& p = api.path;
#define DIETCODE_RESOLVE(name) resolve(h, p, #name, api.name, why)
  const bool ok =
      DIETCODE_RESOLVE(dnnl_version) && DIETCODE_RESOLVE(dnnl_engine_create) &&
      DIETCODE_RESOLVE(dnnl_engine_destroy) && DIETCODE_RESOLVE(dnnl_stream_create) &&
      DIETCODE_RESOLVE(dnnl_stream_wait) && DIETCODE_RESOLVE(dnnl_stream_destroy) &&
      DIETCODE_RESOLVE(dnnl_memory_desc_init_by_strides) &&
      DIETCODE_RESOLVE(dnnl_memory_desc_init_by_tag) && DIETCODE_RESOLVE(dnnl_memory_desc_equal) &&
      DIETCODE_RESOLVE(dnnl_memory_desc_get_size) && DIETCODE_RESOLVE(dnnl_memory_create) &&
      DIETCODE_RESOLVE(dnnl_memory_destroy) && DIETCODE_RESOLVE(dnnl_matmul_desc_init) &&
      DIETCODE_RESOLVE(dnnl_dilated_convolution_forward_desc_init) &&
      DIETCODE_RESOLVE(dnnl_reorder_primitive_desc_create) &&
      DIETCODE_RESOLVE(dnnl_primitive_attr_create) &&
      DIETCODE_RESOLVE(dnnl_primitive_attr_destroy) &&
      DIETCODE_RESOLVE(dnnl_primitive_attr_set_post_ops) &&
      DIETCODE_RESOLVE(dnnl_primitive_attr_set_fpmath_mode) &&
      DIETCODE_RESOLVE(dnnl_post_ops_create) && DIETCODE_RESOLVE(dnnl_post_ops_destroy) &&
      DIETCODE_RESOLVE(dnnl_post_ops_append_eltwise) &&
      DIETCODE_RESOLVE(dnnl_primitive_desc_create) &&
      DIETCODE_RESOLVE(dnnl_primitive_desc_destroy) &&
      DIETCODE_RESOLVE(dnnl_primitive_desc_query) &&
      DIETCODE_RESOLVE(dnnl_primitive_desc_query_md) && DIETCODE_RESOLVE(dnnl_primitive_create) &&
      DIETCODE_RESOLVE(dnnl_primitive_destroy) && DIETCODE_RESOLVE(dnnl_primitive_execute);
#undef DIETCODE_RESOLVE
  if (!ok) return false;
  api.version = *api.dnnl_version();
  if (api.version.major != 2) {
    *why = "no oneDNN: " + p + " is " + api.label() +
           "; dietcode needs the oneDNN 2.x C API (libdnnl.so.2; " + kInstallHint + ")";
    return false;
  }
  // dlsym on a handle searches the library's dependencies too: this finds the libgomp oneDNN
  // was linked against, whichever copy that is.
  if (api.version.cpu_runtime == dnnl::runtime_omp) {
    api.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
    api.omp_get_max_threads = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
  }
  dlsym_into(h, "dnnl_get_effective_cpu_isa", api.dnnl_get_effective_cpu_isa);  // optional
  *out = api;
  why->clear();
  return true;
}

const OnednnApi& onednn_api() {
  static OnednnApi api;
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] { load_onednn(onednn_candidates(), &api, &why); });
  if (!why.empty()) throw EnvironmentError(why);
  return api;
}

std::string onednn_status_name(dnnl::status_t status) {
  switch (status) {
    case 0:
      return "dnnl_success";
    case 1:
      return "dnnl_out_of_memory";
    case 2:
      return "dnnl_invalid_arguments";
    case 3:
      return "dnnl_unimplemented";
    case 4:
      return "dnnl_iterator_ends";
    case 5:
      return "dnnl_runtime_error";
    case 6:
      return "dnnl_not_required";
  }
  return "dnnl_status_t " + std::to_string(status);
}

void check_onednn(dnnl::status_t status, const std::string& what) {
  if (status == dnnl::success) return;
  throw EnvironmentError("oneDNN: " + what + ": " + onednn_status_name(status));
}

}  // namespace dietcode
