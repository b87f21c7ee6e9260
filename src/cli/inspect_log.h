// `dietcode inspect LOG.jsonl`: what a tuning log holds — per op, the best micro-kernel of
// every shape instance measured, with its latency and how many records stand behind it; with
// --by-kernel, every kernel against the best one instance by instance (an A/B of kernels timed
// with `tune --kernels` reads off this view).
#pragma once

#include <string>
#include <vector>

namespace dietcode::cli {

// Prints the view (json: one object per op with its instances). shapes ("T=37") narrow it to
// instances with those values. Damaged lines are reported on stderr and skipped. Returns the
// exit code; throws UserError for a missing file or a bad --shape.
int inspect_log(const std::string& path, bool json, const std::vector<std::string>& shapes,
                bool quiet);

// --by-kernel: per op, each kernel's time on every instance it was timed on against that
// instance's fastest kernel (geometric mean), how often it is the fastest, and its mean time;
// fastest first. Same arguments and errors as inspect_log.
int inspect_log_by_kernel(const std::string& path, bool json,
                          const std::vector<std::string>& shapes, bool quiet);

}  // namespace dietcode::cli
