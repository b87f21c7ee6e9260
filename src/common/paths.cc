#include "common/paths.h"

#include <cstdlib>

#include "common/version.h"

namespace dietcode {

namespace fs = std::filesystem;

const char* tool_version() { return DIETCODE_VERSION; }

// Environment variables are read here and nowhere else, so the places that can change
// dietcode's behaviour from outside are all in one file.
static const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

fs::path data_dir() {
  if (const char* dir = env("DIETCODE_DATA_DIR")) return dir;
  std::error_code ec;
  if (fs::exists(fs::path(DIETCODE_SOURCE_DATA_DIR) / "templates", ec))
    return DIETCODE_SOURCE_DATA_DIR;
  return DIETCODE_INSTALL_DATA_DIR;
}

fs::path cache_dir() {
  if (const char* dir = env("DIETCODE_CACHE_DIR")) return dir;
  if (const char* xdg = env("XDG_CACHE_HOME")) return fs::path(xdg) / "dietcode";
  if (const char* home = env("HOME")) return fs::path(home) / ".cache" / "dietcode";
  return "/tmp/dietcode-cache";
}

}  // namespace dietcode
