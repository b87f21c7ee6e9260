#include "pack/c_names.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/error.h"

namespace dietcode {

std::string wrapper_name(const Workload& workload, const OpSpec& op) {
  std::string name = c_identifier(workload.name + "_" + op.name);
  if (name.rfind("dietcode_", 0) == 0)
    throw UserError(workload.source + ": ops[" + std::to_string(&op - workload.ops.data()) +
                    "].name: the pack function " + name +
                    " would clash with the pack ABI (dietcode_*); rename the workload or op");
  for (const OpSpec& other : workload.ops) {
    if (&other == &op) break;
    if (c_identifier(workload.name + "_" + other.name) == name)
      throw UserError(workload.source + ": ops[" + std::to_string(&op - workload.ops.data()) +
                      "].name: " + other.name + " and " + op.name + " both become the C function " +
                      name + "; rename one");
  }
  return name;
}

static bool reserved(const std::string& name) {
  static const std::set<std::string> words = {
      "auto",     "break",   "case",     "char",   "const",    "continue", "default",
      "do",       "double",  "else",     "enum",   "extern",   "float",    "for",
      "goto",     "if",      "inline",   "int",    "long",     "register", "restrict",
      "return",   "short",   "signed",   "sizeof", "static",   "struct",   "switch",
      "typedef",  "union",   "unsigned", "void",   "volatile", "while",    "bool",
      "class",    "delete",  "new",      "this",   "template", "typename", "namespace",
      "operator", "private", "public",   "true",   "false",    "stream",   "values",
      "args",     "a"};
  return words.count(name) || name.rfind("dietcode_", 0) == 0 || name.rfind("dim_", 0) == 0 ||
         name.rfind("_", 0) == 0;
}

std::vector<std::string> shape_parameter_names(const OpSpec& op) {
  std::vector<std::string> args = op.arg_names();
  std::vector<std::string> out;
  for (const std::string& var : op.vars) {
    std::string name = c_identifier(var);
    if (reserved(name) || std::count(args.begin(), args.end(), name) ||
        std::count(out.begin(), out.end(), name))
      name += "_value";
    out.push_back(name);
  }
  return out;
}

const char* c_element_type(DType dtype) { return dtype == DType::kFloat32 ? "float" : "uint16_t"; }

}  // namespace dietcode
