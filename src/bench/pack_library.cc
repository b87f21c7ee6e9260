#include "bench/pack_library.h"

#include <dlfcn.h>

#include "common/error.h"
#include "dietcode/pack_abi.h"

namespace dietcode {

namespace {

template <typename Fn>
void resolve(void* handle, const char* name, Fn& fn, const std::string& path) {
  dlerror();
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!fn) {
    const char* reason = dlerror();
    throw UserError(path + ": not a dietcode kernel pack: " +
                    (reason ? reason : std::string("no symbol ") + name));
  }
}

}  // namespace

PackLibrary::PackLibrary(const std::string& path) : path_(path) {
  // dlopen searches the library path for a bare name; the user means the file here.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // RTLD_LOCAL: two packs (or a pack and the program) may export the same names.
  handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* reason = dlerror();
    throw UserError(path + ": not a dietcode kernel pack: " + (reason ? reason : "dlopen failed"));
  }
  try {
    resolve(handle_, "dietcode_abi_version", abi_version_, path);
    resolve(handle_, "dietcode_manifest", manifest_, path);
    resolve(handle_, "dietcode_last_error", last_error_, path);
    resolve(handle_, "dietcode_select", select_, path);
    resolve(handle_, "dietcode_launch", launch_, path);
    set_num_threads_ = reinterpret_cast<int (*)(int)>(dlsym(handle_, "dietcode_set_num_threads"));
    num_threads_ = reinterpret_cast<int (*)()>(dlsym(handle_, "dietcode_num_threads"));
    using Constant = int (*)(const char*, int, const void*);
    declare_constant_ = reinterpret_cast<Constant>(dlsym(handle_, "dietcode_declare_constant"));
    forget_constant_ = reinterpret_cast<Constant>(dlsym(handle_, "dietcode_forget_constant"));
    // ABI versions only add: every version has the functions resolved above (version 1), and
    // the thread-pool calls of version 3 and the constant weights of 4 are optional here. Only a version below 1 is foreign.
    const int version = abi_version_();
    if (version < 1)
      throw UserError(path + ": pack ABI version " + std::to_string(version) +
                      "; this dietcode reads version 1 and later: rebuild the pack with it");
  } catch (...) {
    dlclose(handle_);
    handle_ = nullptr;
    throw;
  }
}

// A pack's runtime keeps per-context state and may have threads in flight at exit; like any
// program using it, bench keeps it loaded until the process ends.
PackLibrary::~PackLibrary() = default;

std::string PackLibrary::manifest() const {
  const char* text = manifest_();
  return text ? text : "";
}

std::string PackLibrary::last_error() const {
  const char* text = last_error_();
  return text ? text : "";
}

int PackLibrary::select(const std::string& op, const int64_t* values, int n_values) const {
  return select_(op.c_str(), values, n_values);
}

int PackLibrary::launch(const std::string& op, void* const* args, int n_args, const int64_t* values,
                        int n_values, void* stream) const {
  return launch_(op.c_str(), args, n_args, values, n_values, stream);
}

int PackLibrary::set_num_threads(int n) const {
  return set_num_threads_ ? set_num_threads_(n) : -1;
}

int PackLibrary::num_threads() const { return num_threads_ ? num_threads_() : -1; }

int PackLibrary::declare_constant(const std::string& op, int arg, const void* data) const {
  return declare_constant_ ? declare_constant_(op.c_str(), arg, data) : -1;
}

int PackLibrary::forget_constant(const std::string& op, int arg, const void* data) const {
  return forget_constant_ ? forget_constant_(op.c_str(), arg, data) : -1;
}

const char* pack_status_name(int status) {
  switch (status) {
    case DIETCODE_OK:
      return "DIETCODE_OK";
    case DIETCODE_ERR_INVALID_ARGUMENT:
      return "DIETCODE_ERR_INVALID_ARGUMENT";
    case DIETCODE_ERR_UNKNOWN_OP:
      return "DIETCODE_ERR_UNKNOWN_OP";
    case DIETCODE_ERR_NO_DEVICE:
      return "DIETCODE_ERR_NO_DEVICE";
    case DIETCODE_ERR_ARCH_MISMATCH:
      return "DIETCODE_ERR_ARCH_MISMATCH";
    case DIETCODE_ERR_CUDA:
      return "DIETCODE_ERR_CUDA";
  }
  return "unknown status";
}

}  // namespace dietcode
