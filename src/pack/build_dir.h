// A fresh folder under the system's temporary directory for one build step (the pack's sources
// and objects, or one kernel's compile), removed with everything in it when this goes, unless
// it is to be kept for debugging.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "common/error.h"

namespace dietcode {

class BuildDir {
 public:
  // `stem`: the folder's name before a random suffix ("dietcode-pack").
  explicit BuildDir(const std::string& stem, bool keep = false) : keep_(keep) {
    std::string pattern = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data()))
      throw EnvironmentError(pattern + ": cannot create a build folder");
    path_ = pattern;
  }
  ~BuildDir() {
    std::error_code ec;
    if (!keep_) std::filesystem::remove_all(path_, ec);
  }
  BuildDir(const BuildDir&) = delete;
  BuildDir& operator=(const BuildDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  bool keep_;
  std::filesystem::path path_;
};

}  // namespace dietcode
