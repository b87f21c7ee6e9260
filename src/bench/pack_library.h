// A kernel pack opened with dlopen, as any program using it would: the five C ABI functions of
// include/dietcode/pack_abi.h and nothing else of its insides.
#pragma once

#include <cstdint>
#include <string>

namespace dietcode {

class PackLibrary {
 public:
  // Opens `path` (a name without a slash is taken relative to the current directory, as a
  // user means it, not searched on the library path) and resolves the ABI. Throws UserError
  //   "PATH: not a dietcode kernel pack: <dlerror>"
  // when it does not load or lacks an ABI function, and
  //   "PATH: pack ABI version 2; this dietcode reads version 1: rebuild the pack with it"
  // on a version mismatch.
  explicit PackLibrary(const std::string& path);
  ~PackLibrary();
  PackLibrary(const PackLibrary&) = delete;
  PackLibrary& operator=(const PackLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::string manifest() const;
  std::string last_error() const;
  int select(const std::string& op, const int64_t* values, int n_values) const;
  int launch(const std::string& op, void* const* args, int n_args, const int64_t* values,
             int n_values, void* stream) const;

  // A CPU pack's thread pool (ABI 3: dietcode_set_num_threads / dietcode_num_threads), looked
  // up by name so that packs without them still load. has_thread_control() is false then.
  bool has_thread_control() const { return set_num_threads_ && num_threads_; }
  int set_num_threads(int n) const;  // the pack's status code; -1 without thread control
  int num_threads() const;           // the pool's size; -1 without thread control

  // Constant weights (ABI 4: dietcode_declare_constant / dietcode_forget_constant), optional
  // like the thread calls: has_constants() is false for older packs, and the calls return -1.
  bool has_constants() const { return declare_constant_ && forget_constant_; }
  int declare_constant(const std::string& op, int arg, const void* data) const;
  int forget_constant(const std::string& op, int arg, const void* data) const;

 private:
  std::string path_;
  void* handle_ = nullptr;
  int (*abi_version_)() = nullptr;
  const char* (*manifest_)() = nullptr;
  const char* (*last_error_)() = nullptr;
  int (*select_)(const char*, const int64_t*, int) = nullptr;
  int (*launch_)(const char*, void* const*, int, const int64_t*, int, void*) = nullptr;
  int (*set_num_threads_)(int) = nullptr;
  int (*num_threads_)() = nullptr;
  int (*declare_constant_)(const char*, int, const void*) = nullptr;
  int (*forget_constant_)(const char*, int, const void*) = nullptr;
};

// "DIETCODE_ERR_CUDA" for a pack status code.
const char* pack_status_name(int status);

}  // namespace dietcode
