// The register tile stays in registers: compiles candidates the way the tuner does (the system
// compiler, CxxCompiler::flags, -S) and checks that the micro-kernel's unrolled k loop never
// stores a vector register to the stack. A stored accumulator means the whole MR x NR tile
// lives in memory, a load and a store per FMA, which cost about a quarter of the speed of the
// no-epilogue dense kernels before fma_acc worked on a local copy (see microkernel_avx2.h).
//
// Reloads are allowed: the GELU epilogue's constants are hoisted out of the loop and some
// tiles reload a few of them. Only assembly is produced, so the AVX-512 cases run on any x86
// machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "x86/cxx_compiler.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

struct TileCase {
  const char* isa;       // "kAvx2" or "kAvx512"
  int mr, nr, unroll;
  const char* params;    // the rest of Params<MR, NR, ...>: KC, MC, NC, LOOP, TM, PACK_A, PF;
                         // for the dot form, of DotParams<MR, NR, ...>: KC, THREADS_M
  const char* epilogue;  // an Epilogue enumerator
  // run (the BLIS form), run_dot (MR x NR vector accumulators) or run_wbcast (the BLIS
  // Params with PACK_A = 0, the tile stored transposed).
  enum Form { kBlis, kDot, kWbcast } form = kBlis;
  bool dot() const { return form == kDot; }
  const char* run() const { return form == kDot ? "run_dot" : form == kWbcast ? "run_wbcast" : "run"; }
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Assembly of one candidate compiled as the tuner compiles it.
std::string assemble(const TileCase& c, const fs::path& dir) {
  const std::string level = std::string(c.isa) == "kAvx512" ? "x86-64-v4" : "x86-64-v3";
  const fs::path src = dir / "cand.cc", out = dir / "cand.s";
  std::ofstream(src) << "#include \"x86/ops_x86.h\"\n"
                     << "extern \"C\" int cand(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {\n"
                     << "  return dc_x86::" << c.run()
                     << "<dc_x86::OpKind::kDense, dc_x86::Epilogue::" << c.epilogue << ", dc_x86::"
                     << (c.dot() ? "DotParams<" : "Params<") << c.mr << ", " << c.nr << ", "
                     << c.params << ", " << c.unroll << ", dc_x86::Isa::" << c.isa
                     << ">, 768, 768>(a, rt);\n}\n";
  CxxCompiler compiler;
  std::string command;
  for (const std::string& word : compiler.argv()) command += shell_quote(word) + " ";
  for (const std::string& flag : CxxCompiler::flags(level)) command += shell_quote(flag) + " ";
  command += "-I" + shell_quote(std::string(DIETCODE_SOURCE_DIR) + "/templates") + " -S " +
             shell_quote(src.string()) + " -o " + shell_quote(out.string()) + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  return text.str();
}

struct Block {
  int fmas = 0;
  int fmas_from_memory = 0;  // FMAs whose B operand is a load folded in
  std::vector<std::string> stack_stores;
};

// The assembly cut at its local labels and after every jump; the unrolled k loop's body is
// then a block of its own (what follows its closing branch, e.g. the epilogue making room for
// GELU's temporaries, is not).
std::vector<Block> blocks_of(const std::string& assembly) {
  static const std::regex label(R"(^\.L\d+:)");
  static const std::regex jump(R"(^\s+j[a-z]+\s)");
  static const std::regex vector_to_stack(R"(\bv?mov\w*\s+%[xyz]mm\d+,\s*-?\d*\(%[re]sp\))");
  std::vector<Block> blocks(1);
  std::istringstream lines(assembly);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, label)) blocks.emplace_back();
    if (line.find("vfmadd") != std::string::npos) {
      ++blocks.back().fmas;
      if (line.find('(') != std::string::npos) ++blocks.back().fmas_from_memory;
    }
    if (std::regex_search(line, vector_to_stack)) blocks.back().stack_stores.push_back(line);
    if (std::regex_search(line, jump)) blocks.emplace_back();
  }
  return blocks;
}

TEST(RegisterTile, TheUnrolledKLoopNeverStoresAVectorRegisterToTheStack) {
  const TileCase cases[] = {
      // The BERT kernels the tuner picked on the AVX-512 Xeon, with and without an epilogue.
      {"kAvx512", 12, 32, 8, "192, 168, 1024, 1, 1, 0, 16", "kNone"},
      {"kAvx512", 12, 32, 8, "192, 168, 1024, 1, 1, 0, 16", "kBiasGelu"},
      {"kAvx512", 28, 16, 8, "384, 336, 3072, 1, 1, 1, 16", "kNone"},
      {"kAvx512", 14, 32, 4, "256, 112, 3072, 0, 0, 1, 0", "kBias"},
      {"kAvx512", 6, 64, 4, "256, 96, 3072, 0, 0, 1, 0", "kRelu"},
      // AVX2: the default tile, read-in-place A, and a tall tile.
      {"kAvx2", 6, 16, 4, "256, 72, 3072, 0, 0, 1, 0", "kNone"},
      {"kAvx2", 6, 16, 4, "256, 72, 3072, 0, 0, 0, 0", "kBiasGelu"},
      {"kAvx2", 14, 8, 4, "256, 112, 3072, 1, 0, 0, 8", "kNone"},
      // The dot-product form: its MR x NR accumulators are one vector per C element.
      {"kAvx512", 4, 6, 2, "768, 1", "kNone", TileCase::kDot},
      {"kAvx512", 4, 6, 2, "768, 1", "kBiasGelu", TileCase::kDot},
      {"kAvx2", 4, 2, 2, "768, 1", "kBias", TileCase::kDot},
      // The W-broadcast form: W's rows broadcast in place (and prefetched), the tile stored
      // transposed through a stack buffer after the loop (so no GELU here: its FMAs would make
      // that store look like a k loop).
      {"kAvx512", 28, 16, 4, "768, 168, 768, 0, 0, 0, 8", "kNone", TileCase::kWbcast},
      {"kAvx512", 6, 64, 4, "768, 168, 768, 1, 0, 0, 0", "kBias", TileCase::kWbcast},
      {"kAvx2", 6, 16, 4, "768, 168, 768, 0, 0, 0, 8", "kBias", TileCase::kWbcast},
      // 4 x 24 fills AVX2's 16 registers (12 accumulators, 3 B vectors, the broadcast): these
      // kept an accumulator on the stack until such tiles could take B from memory.
      {"kAvx2", 4, 24, 4, "512, 72, 3072, 0, 0, 1, 0", "kNone"},
      {"kAvx2", 4, 24, 8, "1024, 192, 96, 0, 1, 0, 0", "kNone", TileCase::kWbcast},
      {"kAvx2", 4, 24, 2, "1024, 192, 96, 0, 1, 0, 0", "kBias", TileCase::kWbcast},
  };
  std::string pattern = (fs::temp_directory_path() / "register-tile-test-XXXXXX").string();
  const fs::path dir = ::mkdtemp(pattern.data());
  for (const TileCase& c : cases) {
    const std::string name = std::string(c.isa) + " " + std::to_string(c.mr) + "x" +
                             std::to_string(c.nr) + " <" + c.params + "> " + c.epilogue;
    const int width = std::string(c.isa) == "kAvx512" ? 16 : 8;
    const int loop_fmas = c.mr * (c.dot() ? c.nr : c.nr / width) * c.unroll;
    int loops = 0;
    for (const Block& b : blocks_of(assemble(c, dir))) {
      if (b.fmas < loop_fmas) continue;
      ++loops;
      EXPECT_TRUE(b.stack_stores.empty())
          << name << ": " << b.stack_stores.size() << " vector stores to the stack in a k loop of "
          << b.fmas << " FMAs, the first: " << b.stack_stores.front();
    }
    EXPECT_GT(loops, 0) << name << ": no block with the " << loop_fmas
                        << " FMAs of an unrolled k step; did the template change shape?";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// The other side of B_FROM_MEMORY (microkernel_avx2.h): a tile with registers to spare keeps
// every B vector in a register. Given the choice, GCC folded each B load of a 2 x 32 tile into
// both rows' FMAs, twice the loads, and the kernel ran 17-19% slower.
TEST(RegisterTile, ATileWithRegistersToSpareLoadsEachBVectorOnce) {
  const TileCase cases[] = {
      {"kAvx2", 2, 32, 8, "1024, 192, 96, 0, 1, 0, 0", "kNone", TileCase::kWbcast},
      {"kAvx2", 6, 16, 4, "256, 72, 3072, 0, 0, 1, 0", "kNone"},
  };
  std::string pattern = (fs::temp_directory_path() / "register-tile-test-XXXXXX").string();
  const fs::path dir = ::mkdtemp(pattern.data());
  for (const TileCase& c : cases) {
    const int loop_fmas = c.mr * c.nr / 8 * c.unroll;
    int loops = 0;
    for (const Block& b : blocks_of(assemble(c, dir))) {
      if (b.fmas < loop_fmas) continue;
      ++loops;
      EXPECT_EQ(b.fmas_from_memory, 0)
          << c.mr << "x" << c.nr << " <" << c.params << ">: " << b.fmas_from_memory << " of "
          << b.fmas << " FMAs in a k loop load B themselves";
    }
    EXPECT_GT(loops, 0) << c.mr << "x" << c.nr << ": no k loop found";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace dietcode
