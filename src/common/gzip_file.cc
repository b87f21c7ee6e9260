#include "common/gzip_file.h"

#include <errno.h>
#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace dietcode {

bool is_gzip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::string read_file_maybe_gzip(const std::string& path) {
  if (!is_gzip_file(path)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw UserError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    return text.str();
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw UserError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  gzbuffer(gz, 1 << 17);
  std::string out;
  char chunk[1 << 16];
  for (;;) {
    int n = gzread(gz, chunk, sizeof chunk);
    if (n > 0) {
      out.append(chunk, size_t(n));
      continue;
    }
    int code = Z_OK;
    const char* why = gzerror(gz, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      std::string message = fmt::format("{}: cannot read: corrupt gzip data ({})", path,
                                        why && *why ? why : "unknown zlib error");
      gzclose(gz);
      throw UserError(message);
    }
    break;  // n == 0: the end of the last member
  }
  gzclose(gz);
  return out;
}

}  // namespace dietcode
