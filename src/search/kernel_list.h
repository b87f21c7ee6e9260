// `tune --kernels FILE`: micro-kernels a user lists to be timed as they are, instead of those a
// search would choose (as Triton's autotune(configs=[...]) does): to A/B two variants of a
// template, or to time a hand-picked tile on every shape. The file is one of two forms, told
// apart by its name:
//
//   FILE.jsonl, FILE.jsonl.gz   a tuning log: every kernel its measurement records name, once,
//                               in the order of their first record, whatever their status (a
//                               kernel that failed on another GPU may run here): the kernels
//                               another machine tried, timed on this one.
//   anything else               a JSON array of what a log record's "mk" field holds:
//                                 [{"template": "dense_f32", "params": {"WARPS_M": 2, "TM": 16}}]
//                               Tunables left out keep the template's default (as its seeds
//                               do: TemplateSpace::starting_kernels); "params" may be left out.
//
// This file only reads, and checks what holds for every op: the template exists, it has every
// tunable given, and every value is an integer. Whether a kernel can compute a given op (its
// template serves the op, its tunables satisfy the space's constraints) is the op's search to
// say (OpSearch), which skips the kernels that cannot and says why.
#pragma once

#include <string>
#include <vector>

#include "space/micro_kernel.h"

namespace dietcode {

struct ListedKernel {
  MicroKernel mk;      // every tunable set
  std::string origin;  // where the file lists it, for messages: "ab.json[1]", "ab.jsonl:17"
};

struct KernelList {
  std::vector<ListedKernel> kernels;  // in file order, each kernel once
  std::vector<std::string> notes;     // a log's lines the log reader skipped, one line each
};

// Throws UserError with one line "FILE: PATH: what is wrong" (a log's: "FILE:LINE: PATH: ...")
// for an unreadable file, text that is not JSON, an unknown template or tunable, a value that is
// not an integer, or a file that lists no kernel.
KernelList read_kernel_list(const std::string& path);

// The same over text already in memory (the array form only); `source` names it in errors.
KernelList parse_kernel_list(const std::string& text, const std::string& source);

}  // namespace dietcode
