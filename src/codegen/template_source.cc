#include "codegen/template_source.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/paths.h"

namespace dietcode {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EnvironmentError(path.string() + ": cannot read template");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Appends file's text to out with its local includes expanded in place. A header already
// expanded is skipped (include guards would drop its second copy anyway).
void expand(const fs::path& dir, const std::string& file, std::set<std::string>& seen,
            std::string& out) {
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)"\s*$)re");
  std::istringstream in(read_file(dir / file));
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, include_re)) {
      const std::string header = m[1];
      if (seen.insert(header).second) {
        out += "// ---- begin " + header + "\n";
        expand(dir, header, seen, out);
        out += "// ---- end " + header + "\n";
      }
      continue;
    }
    out += line;
    out += '\n';
  }
}

}  // namespace

std::string load_template_source(const fs::path& dir, const std::string& file) {
  std::set<std::string> seen{file};
  std::string out;
  expand(dir, file, seen, out);
  return out;
}

std::string load_template_source(const std::string& file) {
  return load_template_source(data_dir() / "templates", file);
}

}  // namespace dietcode
