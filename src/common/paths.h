// Where dietcode finds its data (templates/, configs/) and keeps its caches.
#pragma once

#include <filesystem>

namespace dietcode {

// The folder holding templates/ and configs/: $DIETCODE_DATA_DIR if set, else the source tree
// the binary was built from, else the install prefix's share/dietcode.
std::filesystem::path data_dir();

// The kernel cache: $XDG_CACHE_HOME/dietcode, else ~/.cache/dietcode, else /tmp/dietcode-cache.
std::filesystem::path cache_dir();

}  // namespace dietcode
