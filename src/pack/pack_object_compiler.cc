#include "pack/pack_object_compiler.h"

#include <chrono>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "pack/build_dir.h"

namespace dietcode {

PackObjectCompiler::PackObjectCompiler(std::string cxx, std::filesystem::path cache_dir) {
  const BuildDir scratch("dietcode-kernel");  // where --version runs
  units_ = std::make_unique<KernelUnitCompiler>(std::move(cxx), scratch.path(), cache_dir);
}

PackObjectCompiler::~PackObjectCompiler() = default;

CompileResult PackObjectCompiler::compile(const CompileRequest& request) {
  CompileResult result;
  if (request.archs.size() != 1) {
    result.log = request.name + ": a CPU kernel is compiled for one x86-64 level, not " +
                 std::to_string(request.archs.size());
    return result;
  }
  const auto start = std::chrono::steady_clock::now();
  KernelUnit unit;
  unit.file = request.name;
  unit.source = request.source;
  unit.flags = kernel_unit_flags(request.archs[0], request.options);
  unit.entries = request.entries;
  const BuildDir dir("dietcode-kernel");
  const std::string object = unit.file + ".o";
  std::string why = units_->compile(unit, dir.path(), object, &result.cache_hit);
  if (why.rfind("cannot run", 0) == 0) throw EnvironmentError(why);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!why.empty()) {
    result.log = why;
    return result;
  }
  std::ifstream in(dir.path() / object, std::ios::binary);
  ArchBinary binary;
  binary.arch = request.archs[0];
  binary.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (binary.cubin.empty())
    throw EnvironmentError((dir.path() / object).string() + ": the compiled object is empty");
  result.binaries.push_back(std::move(binary));
  result.ok = true;
  return result;
}

}  // namespace dietcode
