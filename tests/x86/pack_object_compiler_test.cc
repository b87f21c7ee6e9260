// PackObjectCompiler: a CPU pack's kernel compile makes the very object the pack links: a
// relocatable ELF object that keeps only the request's entries global, from the object cache
// the second time, and a compile error is a result that names the error.
#include "pack/pack_object_compiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "pack/build_dir.h"
#include "search/compile_step.h"  // first_error_line

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// An inline function every unit could share (it must stay local), a helper, an entry the pack
// calls and an extern "C" function it does not.
const char* kSource = R"(
inline int shared_inline(int x) { return x + 1; }
static int twice(int x) { return 2 * x; }
extern "C" __attribute__((visibility("default"))) int dc_test_entry(int x) {
  return twice(shared_inline(x));
}
extern "C" __attribute__((visibility("default"))) int dc_test_not_kept(int x) { return x; }
)";

CompileRequest request(const std::string& source) {
  CompileRequest r;
  r.name = "kernel_dc_test_entry.cc";
  r.source = source;
  r.archs = {"x86-64-v3"};
  r.want_ptx = false;
  r.entries = {"dc_test_entry"};
  return r;
}

// `nm -g --defined-only` of the object's bytes: its global symbols, one a line.
std::string global_symbols(const std::string& object, const fs::path& dir) {
  const fs::path file = dir / "object.o";
  std::ofstream(file, std::ios::binary) << object;
  std::string out;
  FILE* p = popen(("nm -g --defined-only '" + file.string() + "' 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

TEST(PackObjectCompiler, MakesARelocatableObjectThatKeepsOnlyItsEntriesGlobal) {
  const BuildDir dir("pack-object-compiler-test");
  PackObjectCompiler compiler("c++", {});
  CompileResult r = compiler.compile(request(kSource));
  ASSERT_TRUE(r.ok) << r.log;
  const ArchBinary* object = r.binary("x86-64-v3");
  ASSERT_NE(object, nullptr);
  ASSERT_GT(object->cubin.size(), 64u);
  EXPECT_EQ(object->cubin.compare(0, 4,
                                  "\x7f"
                                  "ELF"),
            0);
  EXPECT_EQ(object->cubin[16], 1) << "not a relocatable object (ET_REL): the pack cannot link it";
  const std::string symbols = global_symbols(object->cubin, dir.path());
  EXPECT_NE(symbols.find(" dc_test_entry"), std::string::npos) << symbols;
  EXPECT_EQ(symbols.find("dc_test_not_kept"), std::string::npos) << symbols;
  EXPECT_EQ(symbols.find("shared_inline"), std::string::npos)
      << "inline code stayed global: units of two ISA levels could share it\n"
      << symbols;
  EXPECT_FALSE(r.cache_hit);
}

TEST(PackObjectCompiler, TakesTheObjectFromTheCacheTheSecondTime) {
  const BuildDir cache("pack-object-compiler-cache");
  PackObjectCompiler compiler("c++", cache.path());
  CompileResult first = compiler.compile(request(kSource));
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  CompileResult second = compiler.compile(request(kSource));
  ASSERT_TRUE(second.ok) << second.log;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_TRUE(first.binaries.at(0).cubin == second.binaries.at(0).cubin);
  // Another entry list is another object (objcopy keeps other symbols): not the cached one.
  CompileRequest other = request(kSource);
  other.entries = {"dc_test_entry", "dc_test_not_kept"};
  CompileResult third = compiler.compile(other);
  ASSERT_TRUE(third.ok) << third.log;
  EXPECT_FALSE(third.cache_hit);
}

TEST(PackObjectCompiler, ACompileErrorIsAResultThatNamesIt) {
  PackObjectCompiler compiler("c++", {});
  CompileResult r = compiler.compile(request("int broken = ;\n"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.binaries.empty());
  EXPECT_NE(first_error_line(r.log).find("error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("kernel_dc_test_entry.cc"), std::string::npos) << r.log;
}

TEST(PackObjectCompiler, RefusesARequestForSeveralLevels) {
  PackObjectCompiler compiler("c++", {});
  CompileRequest r = request(kSource);
  r.archs = {"x86-64-v3", "x86-64-v4"};
  CompileResult result = compiler.compile(r);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("one x86-64 level"), std::string::npos) << result.log;
}

}  // namespace
}  // namespace dietcode
