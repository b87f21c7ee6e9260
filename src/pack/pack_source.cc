#include "pack/pack_source.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/error.h"
#include "common/version.h"
#include "pack/c_names.h"
#include "pack/embedded_runtime.h"
#include "pack/manifest.h"
#include "pack/pack_target.h"
#include "workload/op_layout.h"

namespace dietcode {

std::string c_string_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?' would risk a trigraph
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

namespace {

std::map<std::string, std::string> param_map(const OpSpec& op) {
  std::vector<std::string> names = shape_parameter_names(op);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < op.vars.size(); ++i) out[op.vars[i]] = names[i];
  return out;
}

std::string dim_c(const OpSpec& op, const char* dim, const std::map<std::string, std::string>& p) {
  auto it = op.dims.find(dim);
  if (it == op.dims.end()) throw std::logic_error("op " + op.name + " has no dimension " + dim);
  return it->second.to_c(p);
}

// `const int64_t T = dietcode_values[0];` for each shape variable.
std::string read_values(const OpSpec& op) {
  std::vector<std::string> names = shape_parameter_names(op);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += "  const int64_t " + names[i] + " = dietcode_values[" + std::to_string(i) + "];\n" +
           "  (void)" + names[i] + ";\n";
  if (names.empty()) out += "  (void)dietcode_values;\n";
  return out;
}

std::string tensor_type(const OpSpec& op, bool output) {
  return std::string(output ? "" : "const ") + c_element_type(op.dtype) + "*";
}

}  // namespace

namespace {

// Shape arithmetic is done in 128 bits: shape values (at most 2^31 - 1, the runtime checks)
// multiplied by each other and by constants cannot overflow there, so a dimension or stride
// past 64 bits (32 for convolution geometry) is found and refused instead of wrapping.
const char kWideHelpers[] =
    "#ifndef DIETCODE_SHAPE_HELPERS\n"
    "#define DIETCODE_SHAPE_HELPERS\n"
    "__extension__ typedef __int128 dietcode_wide;\n"
    "static int64_t dietcode_fit64(dietcode_wide v, int* ok) {\n"
    "  if (v > INT64_MAX || v < -INT64_MAX) { *ok = 0; return 0; }\n"
    "  return (int64_t)v;\n}\n"
    "static int dietcode_fit32(dietcode_wide v, int* ok) {\n"
    "  if (v > INT32_MAX || v < -INT32_MAX) { *ok = 0; return 0; }\n"
    "  return (int)v;\n}\n"
    "#endif\n";

}  // namespace

std::string shape_function_c(const OpSpec& op, const std::string& name) {
  auto p = param_map(op);
  std::string out = std::string(kWideHelpers) + "static int " + name +
                    "(const int64_t* dietcode_values, DietcodeArgs* dietcode_args) {\n" +
                    "  int ok = 1;\n";
  std::vector<std::string> names = shape_parameter_names(op);
  for (size_t i = 0; i < names.size(); ++i)
    out += "  const dietcode_wide " + names[i] + " = dietcode_values[" + std::to_string(i) +
           "];\n  (void)" + names[i] + ";\n";
  if (names.empty()) out += "  (void)dietcode_values;\n";
  auto let = [&](const char* dim) {
    out += std::string("  const dietcode_wide dim_") + dim + " = " + dim_c(op, dim, p) + ";\n";
  };
  auto set = [&](const char* field, const std::string& value) {
    bool narrow = std::string(field).rfind("conv_", 0) == 0;
    out += std::string("  dietcode_args->") + field + " = dietcode_fit" + (narrow ? "32" : "64") +
           "(" + value + ", &ok);\n";
  };
  switch (op.kind) {
    case OpKind::kDense:  // Y[M,N] = X[M,K] . W[N,K]^T
      for (const char* d : {"M", "N", "K"}) let(d);
      set("batch", "1");
      set("stride_a", "dim_M * dim_K");
      set("stride_b", "dim_N * dim_K");
      break;
    case OpKind::kBatchMatmul:  // Y[B,M,N] = A[B,M,K] . B[B,K,N]
      for (const char* d : {"B", "M", "N", "K"}) let(d);
      set("batch", "dim_B");
      set("stride_a", "dim_M * dim_K");
      set("stride_b", "dim_K * dim_N");
      break;
    case OpKind::kConv2d: {  // implicit GEMM: M = N*P*Q, N = K, K = R*S*C
      for (const char* d : {"N", "H", "W", "C", "K", "R", "S"}) let(d);
      auto extent = [&](const char* out_dim, const char* in, const char* filter, int axis) {
        out += std::string("  const dietcode_wide dim_") + out_dim + " = (dim_" + in + " + " +
               std::to_string(2 * op.pad[axis]) + " - " + std::to_string(op.dilation[axis]) +
               " * (dim_" + filter + " - 1) - 1) / " + std::to_string(op.stride[axis]) + " + 1;\n";
      };
      extent("P", "H", "R", 0);
      extent("Q", "W", "S", 1);
      out += "  const dietcode_wide dim_M = dim_N * dim_P * dim_Q;\n";
      set("batch", "1");
      for (const char* d : {"N", "H", "W", "C", "K", "R", "S", "P", "Q"})
        set((std::string("conv_") + char(std::tolower(d[0]))).c_str(), std::string("dim_") + d);
      set("stride_h", std::to_string(op.stride[0]));
      set("stride_w", std::to_string(op.stride[1]));
      set("pad_h", std::to_string(op.pad[0]));
      set("pad_w", std::to_string(op.pad[1]));
      set("dilation_h", std::to_string(op.dilation[0]));
      set("dilation_w", std::to_string(op.dilation[1]));
      out += "  const dietcode_wide dim_N_gemm = dim_K, dim_K_gemm = dim_R * dim_S * dim_C;\n";
      set("m", "dim_M");
      set("n", "dim_N_gemm");
      set("k", "dim_K_gemm");
      set("stride_c", "dim_M * dim_N_gemm");
      return out + "  return ok;\n}\n";
    }
  }
  set("m", "dim_M");
  set("n", "dim_N");
  set("k", "dim_K");
  set("stride_c", "dim_M * dim_N");
  return out + "  return ok;\n}\n";
}

std::string wrapper_prototype(const Workload& workload, const OpSpec& op) {
  std::vector<std::string> args = op.arg_names();
  std::string out = "int " + wrapper_name(workload, op) + "(";
  for (size_t i = 0; i < args.size(); ++i)
    out += tensor_type(op, i + 1 == args.size()) + " " + args[i] + ", ";
  for (const std::string& name : shape_parameter_names(op)) out += "int64_t " + name + ", ";
  return out + "void* stream)";
}

std::string link_advice(const std::string& library_name) {
  const bool lib_so = library_name.size() > 6 && library_name.rfind("lib", 0) == 0 &&
                      library_name.compare(library_name.size() - 3, 3, ".so") == 0;
  // -lNAME finds only libNAME.so; a library named otherwise (-o pack, -o kernels.so) is
  // linked by its path.
  return lib_so ? "Link with -l" + library_name.substr(3, library_name.size() - 6) +
                      " or dlopen it."
                : "Link with its path (" + library_name + ") or dlopen it.";
}

namespace {

std::string header_text(const PackRequest& request, const std::string& library_name,
                        const std::string& header_name) {
  const Workload& w = *request.workload;
  std::string guard = "DIETCODE_PACK_" + c_identifier(header_name) + "_";
  std::transform(guard.begin(), guard.end(), guard.begin(), ::toupper);
  std::string out = "/* Generated by dietcode " + std::string(tool_version()) +
                    " (dietcode build): do not edit. */\n"
                    "/* " +
                    header_name + ": the C interface of the kernel pack " + library_name +
                    " (workload " + w.name + ", " + request.choices +
                    ").\n"
                    " *\n"
                    " * " + link_advice(library_name) + "\n" +
                    pack_target(request.target).header_note() +
                    " * Every function returns DIETCODE_OK or a DIETCODE_ERR_* code, explained by\n"
                    " * dietcode_last_error(). float16/bfloat16 tensors are passed as their raw\n"
                    " * 16-bit patterns (uint16_t). */\n"
                    "#ifndef " +
                    guard + "\n#define " + guard + "\n\n" +
                    embedded_runtime_file("include/dietcode/pack_abi.h") +
                    "\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const PackOp& p : request.ops) {
    const OpSpec& op = *p.op;
    out += "/* " + op.name + ": " + to_string(op.kind) + " " + to_string(op.dtype);
    if (op.epilogue != Epilogue::kNone) out += " + " + std::string(to_string(op.epilogue));
    for (const std::string& dim : dim_names(op.kind))
      out += ", " + dim + " = " + op.dims.at(dim).to_string();
    out += "; " + std::to_string(p.kernels.size()) + " kernel(s). */\n";
    out += wrapper_prototype(w, op) + ";\n\n";
  }
  return out + "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " + guard + " */\n";
}

}  // namespace

std::string pack_blob_symbol(size_t i) { return "dietcode_blob_" + std::to_string(i); }

PackSources generate_pack_sources(const PackRequest& request, const std::string& manifest,
                                  const std::string& build_dir, const std::string& library_name,
                                  const std::string& header_name) {
  const Workload& w = *request.workload;
  const PackTarget& target = pack_target(request.target);
  PackSources out;
  out.runtime = target.runtime();
  auto add_blob = [&](std::string file, std::string bytes, bool nul) {
    out.blobs.push_back({std::move(file), std::move(bytes), nul});
    return out.blobs.size() - 1;
  };

  std::string ops_c, wrappers_c, file_scope;
  std::vector<std::string> op_descs;
  for (size_t o = 0; o < request.ops.size(); ++o) {
    const PackOp& p = request.ops[o];
    const OpSpec& op = *p.op;
    std::string id = std::to_string(o);
    if (p.kernels.empty()) throw std::logic_error("op " + op.name + ": no kernels");
    if (p.dispatchers.empty()) throw std::logic_error("op " + op.name + ": no dispatcher");

    // One select function per dispatcher, and a row per target arch naming its dispatcher:
    // the runtime picks the row for the machine it runs on (pick_dispatcher for a GPU, like it
    // picks a CUBIN; pick_level_dispatcher for a CPU).
    ops_c += "// op " + op.name + "\n\n";
    std::string select_rows;
    for (size_t g = 0; g < p.dispatchers.size(); ++g) {
      const PackDispatcher& d = p.dispatchers[g];
      if (d.tree.vars() != op.vars)
        throw std::logic_error("op " + op.name + ": the tree's variables are not the op's");
      for (int k : d.tree.kernels())
        if (k >= int(p.kernels.size()))
          throw std::logic_error("op " + op.name + ": the tree picks a kernel the pack lacks");
      std::string fn = "select_" + id + "_" + std::to_string(g);
      ops_c += "int " + fn + "(const int64_t* dietcode_values) {\n" + read_values(op) +
               d.tree.to_c(shape_parameter_names(op), 2) + "}\n\n";
      for (const std::string& arch : d.archs) {
        bool specific = false;
        int cc = target.arch_number(arch, &specific);
        select_rows += "    {" + std::to_string(cc) + ", " + (specific ? "true" : "false") + ", " +
                       fn + "},\n";
      }
    }
    ops_c += "const ArchSelect selects_" + id + "[] = {\n" + select_rows + "};\n\n" +
             shape_function_c(op, "shape_" + id) + "\n";
    size_t n_select_rows = 0;
    for (const PackDispatcher& d : p.dispatchers) n_select_rows += d.archs.size();
    ops_c += target.kernel_table(request, p, id, out, file_scope);

    std::vector<std::string> args = op.arg_names();
    std::string arg_list, var_list;
    for (const std::string& a : args) arg_list += c_string_literal(a) + ", ";
    for (const std::string& v : op.vars) var_list += c_string_literal(v) + ", ";
    ops_c += "const char* const args_" + id + "[] = {" + arg_list + "};\n";
    ops_c += "const char* const vars_" + id + "[] = {" + var_list + "nullptr};\n\n";
    int bias = int(std::find(args.begin(), args.end(), "bias") - args.begin());
    op_descs.push_back(
        "    {" + c_string_literal(op.name) + ", args_" + id + ", " + std::to_string(args.size()) +
        ", " + std::to_string(bias < int(args.size()) ? bias : -1) + ", " +
        std::to_string(op.kind == OpKind::kBatchMatmul ? -1 : 1) + ", " +
        std::to_string(dtype_bytes(op.dtype)) + ", vars_" + id + ", " +
        std::to_string(op.vars.size()) + ", selects_" + id + ", " + std::to_string(n_select_rows) +
        ", shape_" + id + ", kernels_" + id + ", " + std::to_string(p.kernels.size()) + "},\n");

    std::string name = wrapper_name(w, op);
    out.exported.push_back(name);
    std::string values;
    for (const std::string& v : shape_parameter_names(op)) values += v + ", ";
    std::string arg_casts;
    for (const std::string& a : args) arg_casts += "(void*)" + a + ", ";
    wrappers_c += "DIETCODE_PACK_EXPORT " + wrapper_prototype(w, op) + " {\n" +
                  "  void* const args[] = {" + arg_casts + "};\n" +
                  (op.vars.empty() ? "  const int64_t* values = nullptr;\n"
                                   : "  const int64_t values[] = {" + values + "};\n") +
                  "  return dietcode_pack::launch_op(dietcode_pack::kOps[" + id + "], args, " +
                  std::to_string(args.size()) + ", values, " + std::to_string(op.vars.size()) +
                  ", stream);\n}\n\n";
  }
  size_t manifest_blob = add_blob("manifest.json", manifest, true);

  std::string asm_c = "__asm__(\n    \".section .rodata.dietcode,\\\"a\\\",@progbits\\n\"\n";
  std::string decls;
  for (size_t i = 0; i < out.blobs.size(); ++i) {
    std::string sym = pack_blob_symbol(i);
    std::string path = build_dir + "/" + out.blobs[i].file;
    asm_c += "    \".balign 64\\n.globl " + sym + "\\n.hidden " + sym + "\\n" + sym +
             ":\\n.incbin " + c_string_literal(c_string_literal(path)).substr(1);
    asm_c.pop_back();  // the closing quote: the directive continues
    asm_c += "\\n" + std::string(out.blobs[i].nul_terminated ? ".byte 0\\n" : "") + "\"\n";
    decls += "extern const unsigned char " + sym + "[];\n";
  }
  asm_c += "    \".previous\\n\");\n";

  out.translation_unit =
      "// Generated by dietcode " + std::string(tool_version()) +
      " (dietcode build): kernel pack " + w.name +
      ". Do not edit.\n"
      "// The loader runtime (" + out.runtime.source +
      ") does the work; this file describes the pack.\n"
      "#include \"" + out.runtime.header + "\"\n\n"
      "// The binaries and manifest, embedded by the assembler from the build folder.\n" +
      asm_c + "\nextern \"C\" {\n" + decls + file_scope + "}\n\nnamespace dietcode_pack {\nnamespace {\n\n" +
      ops_c + "}  // namespace\n\nconst OpDesc kOps[] = {\n" +
      [&] {
        std::string all;
        for (const std::string& d : op_descs) all += d;
        return all;
      }() +
      "};\n\nconst PackDesc kPack = {" + c_string_literal(w.name) +
      ", reinterpret_cast<const char*>(" + pack_blob_symbol(manifest_blob) + "), kOps, " +
      std::to_string(request.ops.size()) + "};\n\n}  // namespace dietcode_pack\n\n" + wrappers_c;

  out.header = header_text(request, library_name, header_name);
  for (const char* abi : {"dietcode_abi_version", "dietcode_manifest", "dietcode_last_error",
                          "dietcode_select", "dietcode_select_arch", "dietcode_launch",
                          "dietcode_set_num_threads", "dietcode_num_threads",
                          "dietcode_declare_constant", "dietcode_forget_constant"})
    out.exported.push_back(abi);
  std::sort(out.exported.begin(), out.exported.end());
  out.version_script = "{\n  global:\n";
  for (const std::string& sym : out.exported) out.version_script += "    " + sym + ";\n";
  out.version_script += "  local:\n    *;\n};\n";
  return out;
}

}  // namespace dietcode
