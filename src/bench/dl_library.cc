#include "bench/dl_library.h"

namespace dietcode {

void* dlopen_first(const std::vector<std::string>& files, std::string* path, std::string* why) {
  std::string first_error;
  for (const std::string& file : files) {
    if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = file;
      return handle;
    }
    const char* reason = dlerror();
    if (first_error.empty()) first_error = reason ? reason : file + ": cannot be loaded";
  }
  std::string tried;
  for (size_t i = 1; i < files.size(); ++i) tried += (i > 1 ? ", " : "") + files[i];
  *why = (files.empty() ? std::string("no library named") : first_error) +
         (tried.empty() ? "" : " (also tried " + tried + ")");
  return nullptr;
}

}  // namespace dietcode
