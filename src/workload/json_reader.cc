#include "workload/json_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "workload/json_path.h"

namespace dietcode {

using json = nlohmann::ordered_json;

std::string read_text_file(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(path + ": cannot read: " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw UserError(path + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      throw UserError(path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return text;
}

namespace {

// Bytes outside printable ASCII become \xNN so a message about binary junk stays one
// readable line (nlohmann quotes the last token it read verbatim).
std::string printable(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A SAX handler that builds the same DOM as nlohmann's own parser while tracking where it is,
// so the extra checks can name the JSON path.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(const std::string& source) : source_(source) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& raw) {
    // nlohmann stores an integer past 64 bits as a double; the user wrote an integer.
    if (raw.find_first_of(".eE") == std::string::npos)
      return fail(next_value_path(), "integer " + printable(raw) + " does not fit in 64 bits");
    return add(json(v));
  }
  bool string(json::string_t& v) { return add(json(std::move(v))); }
  // Only the binary formats (CBOR, MessagePack...) produce these; JSON text never does.
  bool binary(json::binary_t&) { return add(json()); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Frame& top = frames_.back();
    if (!top.keys.insert(k).second) {
      JsonPath object_path = path_to(frames_.size() - 1);
      return fail(object_path, "duplicate key " + quote(k));
    }
    top.key = k;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag: it means nothing to users.
    if (!what.empty() && what[0] == '[') {
      size_t end = what.find("] ");
      if (end != std::string::npos) what = what.substr(end + 2);
    }
    error_ = source_ + ": not valid JSON: " + printable(what);
    return false;
  }

  json take_root() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    json* value = nullptr;
    size_t count = 0;  // arrays: elements added so far
    std::string key;   // objects: the key of the value being read
    std::unordered_set<std::string> keys;
  };

  // Where the element in progress sits inside the first `depth` frames.
  JsonPath path_to(size_t depth) const {
    JsonPath path;
    for (size_t i = 0; i < depth; ++i) {
      const Frame& f = frames_[i];
      // An open child of an array was already counted; a scalar about to be added was not.
      bool child_is_open = i + 1 < frames_.size();
      if (f.value->is_array())
        path = path.index(child_is_open ? f.count - 1 : f.count);
      else
        path = path.key(f.key);
    }
    return path;
  }
  JsonPath next_value_path() const { return path_to(frames_.size()); }

  bool add(json&& value) {
    place(std::move(value));
    return true;
  }

  // Puts a value where the parser is and returns where it now lives.
  json* place(json&& value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& top = frames_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(value));
      ++top.count;
      return &top.value->back();
    }
    // Keys are known to be new (see key()), so append instead of ordered_map's linear
    // lookup, which would make a large object quadratic.
    auto& object = top.value->get_ref<json::object_t&>();
    object.emplace_back(top.key, std::move(value));
    return &object.back().second;
  }

  bool open(json&& container) {
    if (frames_.size() >= kMaxJsonDepth) {
      error_ =
          source_ + ": JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep";
      return false;
    }
    // Children are only ever added to the innermost open container, so this pointer into
    // the parent stays valid until the child is closed.
    json* child = place(std::move(container));
    frames_.emplace_back();
    frames_.back().value = child;
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  bool fail(const JsonPath& path, const std::string& what) {
    error_ = located_message(source_, path, what);
    return false;
  }

  const std::string& source_;
  json root_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

json parse_json_strict(const std::string& text, const std::string& source) {
  StrictDomBuilder builder(source);
  bool ok = json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true);
  if (!ok) {
    if (builder.error().empty()) throw UserError(source + ": not valid JSON");
    throw UserError(builder.error());
  }
  return builder.take_root();
}

}  // namespace dietcode
