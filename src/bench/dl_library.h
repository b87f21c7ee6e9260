// The dlopen steps every vendor-library loader of bench repeats (cuBLAS, cuDNN, oneDNN,
// OpenBLAS): open the first candidate file that loads, and resolve symbols one by one. Each
// loader words its own messages (which library, what to install); these only gather the facts.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace dietcode {

// dlopen's (RTLD_NOW | RTLD_LOCAL: vendor libraries export clashing BLAS names) the first of
// `files` that loads and sets *path to it. The handle is never dlclose'd: these libraries keep
// threads and caches for the life of the process. On failure returns null with *why set to
// the first file's dlerror, plus " (also tried b, c)" when there were more, or to
// "no library named" for an empty list.
void* dlopen_first(const std::vector<std::string>& files, std::string* path, std::string* why);

// fn = dlsym(handle, name); false when the library has no such symbol.
template <typename Fn>
bool dlsym_into(void* handle, const char* name, Fn& fn) {
  dlerror();
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

}  // namespace dietcode
