// The x86-64 CPU target's Compiler: the system C++ compiler (g++ or clang++) run as a child
// process behind the same seam as NvrtcCompiler. A request's source is a complete C++
// translation unit; each requested ISA level ("x86-64-v3", "x86-64-v4") gives one shared
// object, whose bytes go in ArchBinary::cubin (the field holds "the image", whatever the
// target). want_ptx is ignored; ArchBinary::resources stays empty.
//
// Flags, in this order (request.options come after, so they can add -I/-D or override):
//   -std=c++17 -O3 -march=<level> -mtune=generic -ffp-contract=fast
//   -fPIC -shared -fno-plt -fvisibility=hidden
// -mtune=generic, not native: a pack ships to other machines, and our own build machines
// differ (an EPYC Zen 3 without AVX-512 in DESIGN.md, a Xeon with AVX-512 where this was
// written, for which -mtune=native means rocketlake and gives other bytes): the output must
// not depend on the CPU that happened to build it, which the cache key could not name.
// -fvisibility=hidden keeps everything but the entries (marked
// __attribute__((visibility("default")))) out of the dynamic symbol table, so candidates'
// helpers never interpose; -fno-plt calls libc through the GOT; -ffp-contract=fast lets
// a*b+c become an FMA in plain C++ too (intrinsics already are).
//
// How it runs: posix_spawn (no shell, nothing to quote) in a fresh temporary folder, stdin
// from /dev/null, stdout and stderr together into the log, in its own process group so a
// timeout (60 s unless set) kills the driver and its cc1plus/as alike. A compile error, a
// timeout or a compiler killed by a signal is a result (ok == false, the log's line 1 says
// why: "dense.cc:3:12: error: expected ';' before '}' token", "compiler timed out after
// 60 s", "g++ exited with status 1"; then "-march=<level>:" and the full output); an
// environment that cannot compile at all (no compiler, no temporary folder, a compiler
// that "succeeds" without writing an ELF shared object) throws EnvironmentError; an unknown
// ISA level throws UserError. Diagnostics name the file request.name (a #line directive),
// never the temporary folder, so logs are deterministic and cacheable.
//
// Compiler start-up (g++ 12 here: 0.35 s for one small AVX2 micro-kernel, 0.43 s for eight
// in one TU, 2.8 s for eight alone; clang++ 14: 0.20 / 0.24 / 1.6 s) dominates small
// candidates, so compile_batch puts many requests into ONE translation unit and ONE shared
// object per level. What a batched source must obey, because all of them share one TU:
//   - its extern "C" entry names are its own (no two requests in a batch define the same);
//   - everything else it defines at namespace scope lives in a namespace unique to it, or is
//     a template/inline in a header with an include guard (or #pragma once) that all include;
//   - it leaves no macro defined that a later source could trip over (#undef at the end);
//   - requests batch together only when their options and archs are equal (others form
//     their own group), since one TU is compiled with one command line.
// A batch whose combined compile fails is split: requests blamed by an "error" line (which
// names their file, thanks to #line) are compiled alone, the rest are batched again, and if
// nothing can be blamed every request is compiled alone. So a bad candidate fails alone and
// the good ones still get a binary. Every result of a combined compile carries the same
// shared object (it exports the entries of all of them), the combined log, and an equal
// share of the wall time in `seconds`, so summed seconds stay the true compile time.
//
// Caching: fingerprint() names the compiler path, its `--version` line and the fixed flags;
// with the request (source, options, archs, name) that decides the output, so
// CachingCompiler(CxxCompiler&, fingerprint(), dir) caches compile() unchanged. Timeouts are
// results too and CachingCompiler caches them like compile errors (a loaded machine can
// make one stick). CachingCompiler::compile_batch looks each request up, batches the misses
// here, and stores each result under its own key.
//
// Thread-safe: nothing changes after construction; every compile has its own folder.
#pragma once

#include <string>
#include <vector>

#include "nvrtc/compiler.h"

namespace dietcode {

struct CxxCompilerOptions {
  // The compiler to run: the CLI's --cxx PATH. Empty: $CXX (its first word is the program,
  // any others are passed first, so "ccache g++" works), else g++, else clang++ on PATH.
  std::string path;
  double timeout_seconds = 60;  // per compiler invocation (one ISA level)
};

class CxxCompiler : public Compiler {
 public:
  // Finds the compiler and runs `--version`. Throws EnvironmentError when none is found:
  // "no C++ compiler found (tried g++, clang++); install g++ or pass --cxx PATH", or when the
  // one named by --cxx or $CXX is missing or does not answer --version.
  explicit CxxCompiler(CxxCompilerOptions options = {});

  CompileResult compile(const CompileRequest& request) override;

  // One result per request, in request order (see the rules above for what a batched
  // source must obey). Thread-safe like compile().
  std::vector<CompileResult> compile_batch(const std::vector<CompileRequest>& requests) override;
  // Candidates per invocation when compile_all hands them out: start-up is amortised by then
  // and a batch still fails alone quickly enough when one request breaks it.
  int preferred_batch() const override { return 8; }

  // "cxx /usr/bin/g++ [g++ (Debian 12.2.0-14+deb12u1) 12.2.0] -std=c++17 -O3 ...": part of
  // every kernel cache key.
  std::string fingerprint() const;

  // The program and the words passed before any flag ("/usr/bin/ccache", "g++" for
  // CXX="ccache g++"); argv()[0] is an absolute path.
  const std::vector<std::string>& argv() const { return argv_; }
  const std::string& version_line() const { return version_line_; }

  // The flags every compile for `level` gets, before request.options.
  static std::vector<std::string> flags(const std::string& level);
  static const std::vector<std::string>& isa_levels();  // x86-64, x86-64-v2, -v3, -v4

 private:
  struct Unit;  // one translation unit compiled for every level
  CompileResult compile_unit(const Unit& unit);
  void compile_group(const std::vector<CompileRequest>& requests, std::vector<size_t> group,
                     std::vector<CompileResult>* results);

  std::vector<std::string> argv_;
  std::string version_line_;
  double timeout_seconds_;
};

}  // namespace dietcode
