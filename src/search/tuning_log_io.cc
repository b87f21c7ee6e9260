// The tuning log's file side: an append-only writer that survives being killed, and a reader
// that survives what a killed writer leaves behind.
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/error.h"
#include "common/gzip_file.h"
#include "search/tuning_log.h"

namespace dietcode {

namespace {

using nlohmann::json;

// Compiler logs can hold bytes that are not UTF-8; a log line must still be written.
std::string dump_line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

void check_log_appendable(const std::string& path) {
  // Appending text to a gzip file would leave neither a valid gzip file nor a log.
  if (is_gzip_file(path) || (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0))
    throw UserError(path +
                    ": a gzip-compressed tuning log can be read but not appended to; "
                    "decompress it (gunzip -k) and tune into the .jsonl");
}

TuningLogWriter::TuningLogWriter(const std::string& path) : path_(path) {
  check_log_appendable(path);
  // O_APPEND: every write lands at the end, whatever else has the file open; nothing here can
  // overwrite an earlier byte. O_RDWR only to read the last byte back.
  fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw EnvironmentError(
        fmt::format("{}: cannot open the tuning log: {}", path, std::strerror(errno)));
  struct stat st {};
  char last = '\n';
  if (fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      pread(fd_, &last, 1, st.st_size - 1) == 1 && last != '\n') {
    // A crash tore the last line: end it here, so it stays one (skipped) line and the next
    // record starts clean.
    try {
      write_line("\n");
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
}

TuningLogWriter::~TuningLogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TuningLogWriter::append(const TuningRecord& record) {
  write_line(dump_line(record.to_json()));
}

void TuningLogWriter::append_json(const json& line) {
  auto kind = line.is_object() ? line.find("kind") : line.end();
  if (!line.is_object() || kind == line.end() || !kind->is_string() || *kind == "measurement")
    throw std::invalid_argument("append_json: expected an object with a \"kind\" of its own");
  write_line(dump_line(line));
}

void TuningLogWriter::write_line(const std::string& text) {
  // After a failed write the file may end in part of a line: start on a fresh one.
  std::string line = torn_ ? "\n" + text : text;
  torn_ = false;
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      // Whatever part reached the file stays a torn line; the next record starts on a new one.
      torn_ = done > 0;
      throw EnvironmentError(
          fmt::format("{}: cannot write the tuning log: {}", path_, std::strerror(error)));
    }
    done += size_t(n);
  }
}

void TuningLogWriter::sync() {
  if (fdatasync(fd_) != 0 && errno != EINVAL)  // EINVAL: a special file, nothing to sync
    throw EnvironmentError(
        fmt::format("{}: cannot write the tuning log: {}", path_, std::strerror(errno)));
}

TuningLog parse_tuning_log(const std::string& text, const std::string& source,
                           std::vector<std::string>& warnings) {
  TuningLog log;
  size_t begin = 0;
  for (int line_number = 1; begin < text.size(); ++line_number) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;

    auto skip = [&](const std::string& reason) {
      warnings.push_back(fmt::format("{}:{}: skipped: {}", source, line_number, reason));
    };
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      skip("invalid JSON (truncated or corrupt line)");
      continue;
    }
    if (!j.is_object()) {
      skip("expected a JSON object");
      continue;
    }
    auto kind = j.find("kind");
    if (kind != j.end() && !kind->is_string()) {
      skip("kind: expected a string");
      continue;
    }
    if (kind != j.end() && *kind != "measurement") {
      log.others.push_back(std::move(j));
      continue;
    }
    try {
      log.records.push_back(TuningRecord::from_json(j));
      log.record_lines.push_back(line_number);
    } catch (const UserError& e) {
      skip(e.what());
    } catch (const json::exception& e) {  // a value out of range for its C++ type
      skip(fmt::format("unreadable value ({})", e.what()));
    }
  }
  return log;
}

TuningLog read_tuning_log(const std::string& path, std::vector<std::string>& warnings,
                          bool must_exist) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (must_exist) throw UserError(path + ": no such tuning log");
    return {};
  }
  if (fs::is_directory(path, ec)) throw UserError(path + ": cannot read: Is a directory");
  return parse_tuning_log(read_file_maybe_gzip(path), path, warnings);
}

bool is_tuning_log_path(const std::string& path) {
  auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".jsonl") || ends_with(".jsonl.gz");
}

}  // namespace dietcode
