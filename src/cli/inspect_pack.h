// `dietcode inspect libNAME.so`: what a kernel pack holds, read from the pack itself.
#pragma once

#include <string>
#include <vector>

namespace dietcode::cli {

// Loads the pack with dlopen (no GPU needed) and prints its manifest: shape variables, and per
// op its kernels and its decision tree with each leaf's time lost (regret). json: the manifest
// itself. shape ("T=37" or "B=2,T=37"): explains that dispatch for every op whose variables it
// gives — the tree path, the kernel, its measured (or predicted) time, the best time, the
// runner-up. Returns the exit code; throws UserError for a file that is not a pack or a bad
// --shape.
int inspect_pack(const std::string& path, bool json, const std::string& shape);

// The same with repeated --shape options ({"B=2", "T=37"}), as `inspect` collects them.
int inspect_pack(const std::string& path, bool json, const std::vector<std::string>& shapes);

}  // namespace dietcode::cli
