#include "common/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

namespace dietcode {

namespace fs = std::filesystem;

namespace {

// A name no other writer (thread or process) uses at the same moment.
std::string temporary_suffix() {
  static std::atomic<unsigned long> counter{0};
  std::ostringstream out;
  out << ".tmp." << ::getpid() << '.' << std::this_thread::get_id() << '.' << counter++;
  return out.str();
}

}  // namespace

bool write_file_atomically(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path temporary = path;
  temporary += temporary_suffix();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out.write(bytes.data(), std::streamsize(bytes.size())) || !out.flush()) {
      out.close();
      fs::remove(temporary, ec);
      return false;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return false;
  }
  return true;
}

}  // namespace dietcode
