// Writing a file so that readers (threads or other processes) see either nothing, the old
// bytes or all the new ones: the bytes go to a name no other writer uses at that moment, then
// rename(2) puts them in place, atomically on one filesystem. The on-disk caches (compiled
// kernels, pack objects) are shared by every dietcode running on the machine and rely on it.
#pragma once

#include <filesystem>
#include <string>

namespace dietcode {

// Creates the folder if needed. False (and nothing left behind) when any step fails: a cache
// that cannot be written is slower, not wrong, so callers count failures instead of throwing.
bool write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace dietcode
