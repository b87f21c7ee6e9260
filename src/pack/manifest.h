// The manifest every pack carries (dietcode_manifest()): a JSON document that says what is in
// the pack, for programs that load it and for `dietcode inspect`.
//
//   {"format": "dietcode-pack", "abi_version": 3, "target": "cuda", "name": "bert_dense",
//    "tool_version": "0.1.0", "archs": ["sm_80", "sm_90"], "ptx_arch": "compute_90",
//    // a CPU pack: "target": "cpu", "archs": ["x86-64-v3", "x86-64-v4"], "ptx_arch": null,
//    // and each kernel's "resources" names the one level it was compiled for
//    "choices": "measured",
//    "shape_vars": [{"name": "T", "min": 1, "max": 128, "count": 128}],   // + "values" when
//                                                                         //   not every integer
//    "ops": [{"name": "qkv", "function": "bert_dense_qkv", "op": "dense", "dtype": "float32",
//             "epilogue": "none", "weight": 1, "vars": ["T"], "args": ["X", "W", "Y"],
//             "dims": {"M": "16*T", "N": "2304", "K": "768"},
//             "kernels": [{"id": 0, "template": "dense_f32", "params": {...}, "key": "...",
//                          "plan": {"entry": ..., "threads": 256, "tile_m": 64, ...},
//                                   // + "tma_box_k": 64 for a kernel that takes tensor maps
//                                   // + "m_tiles_per_block": n when a block walks n M tiles
//                          "resources": {"sm_90": {"registers": 96, ...}}}],
//             "tree": {"vars": ["T"], "root": {...}},          // decision_tree.h
//             "dispatchers": [{"archs": ["sm_90a"], "tree": {...}},   // only when the archs
//                             {"archs": ["sm_80"], "tree": {...}}],   // need different trees
//             "instances": {"values": [[1], ...], "weight": [...], "best_us": [...],
//                           "latency_us": [[k0, k1, ...], ...]}}]}  // null = not measured
//
// Nothing in it depends on where or when the pack was built, so equal inputs give equal packs.
#pragma once

#include <nlohmann/json.hpp>

#include "pack/pack_request.h"

namespace dietcode {

nlohmann::json pack_manifest(const PackRequest& request);

// "sm_90a" -> 90 (arch_specific = true), "compute_90" -> 90. Throws UserError otherwise.
int arch_number(const std::string& arch, bool* arch_specific = nullptr);

}  // namespace dietcode
