#include "measure/gpu_protocol.h"

#include <limits>
#include <stdexcept>

namespace dietcode {

namespace {

using nlohmann::json;

json kernel_to_json(const WorkerKernel& k) {
  const LaunchPlan& p = k.plan;
  json j = {{"id", k.id},
            {"image", json::binary(std::vector<uint8_t>(k.image.begin(), k.image.end()))},
            {"entry", p.entry},
            {"threads", p.threads},
            {"dynamic_smem_bytes", p.dynamic_smem_bytes},
            {"tile_m", p.tile_m},
            {"tile_n", p.tile_n},
            {"split_k", p.split_k},
            {"reduce_entry", p.reduce_entry},
            {"reduce_threads", p.reduce_threads},
            {"min_alignment_bytes", p.min_alignment_bytes},
            {"tma_box_k", p.tma_box_k},
            {"m_tiles_per_block", p.m_tiles_per_block}};
  if (!p.prepacked_entry.empty()) {
    j["prepack_entry"] = p.prepack_entry;
    j["prepacked_entry"] = p.prepacked_entry;
    j["panel_nr"] = p.panel_nr;
    j["panel_kc"] = p.panel_kc;
  }
  return j;
}

WorkerKernel kernel_from_json(const json& j) {
  WorkerKernel k;
  k.id = j.at("id").get<std::string>();
  const auto& bytes = j.at("image").get_binary();
  k.image.assign(bytes.begin(), bytes.end());
  LaunchPlan& p = k.plan;
  p.entry = j.at("entry").get<std::string>();
  p.threads = j.at("threads").get<int>();
  p.dynamic_smem_bytes = j.at("dynamic_smem_bytes").get<int>();
  p.tile_m = j.at("tile_m").get<int>();
  p.tile_n = j.at("tile_n").get<int>();
  p.split_k = j.at("split_k").get<int>();
  p.reduce_entry = j.at("reduce_entry").get<std::string>();
  p.reduce_threads = j.at("reduce_threads").get<int>();
  p.min_alignment_bytes = j.at("min_alignment_bytes").get<int>();
  p.tma_box_k = j.at("tma_box_k").get<int>();
  if (p.tma_box_k < 0) throw std::invalid_argument("negative tma_box_k");
  p.m_tiles_per_block = j.value("m_tiles_per_block", 1);
  if (p.m_tiles_per_block < 1) throw std::invalid_argument("m_tiles_per_block below 1");
  if (j.contains("prepacked_entry")) {
    p.prepack_entry = j.at("prepack_entry").get<std::string>();
    p.prepacked_entry = j.at("prepacked_entry").get<std::string>();
    p.panel_nr = j.at("panel_nr").get<int>();
    p.panel_kc = j.at("panel_kc").get<int>();
  }
  return k;
}

}  // namespace

json to_json(const WorkerCandidate& c) {
  json shapes = json::array();
  for (const GemmShape& s : c.shapes) shapes.push_back({s.batch, s.M, s.N, s.K});
  json j = {{"kernel", kernel_to_json(c.kernel)},
            {"op",
             {{"name", c.op.name},
              {"kind", int(c.op.kind)},
              {"dtype", int(c.op.dtype)},
              {"epilogue", int(c.op.epilogue)},
              {"transpose_a", c.op.transpose_a},
              {"transpose_b", c.op.transpose_b},
              {"weight_layout", int(c.op.weight_layout)}}},
            {"shapes", shapes},
            {"check_shapes", c.check_shapes}};
  if (!c.conv.empty()) {
    json conv = json::array();
    for (const Conv2dShape& g : c.conv)
      conv.push_back({g.n, g.h, g.w, g.c, g.k, g.r, g.s, g.p, g.q, g.stride_h, g.stride_w, g.pad_h,
                      g.pad_w, g.dilation_h, g.dilation_w});
    j["conv"] = conv;
  }
  if (c.reference) j["reference"] = kernel_to_json(*c.reference);
  return j;
}

WorkerCandidate candidate_from_json(const json& j) {
  try {
    WorkerCandidate c;
    c.kernel = kernel_from_json(j.at("kernel"));
    const json& op = j.at("op");
    c.op.name = op.at("name").get<std::string>();
    c.op.kind = OpKind(op.at("kind").get<int>());
    c.op.dtype = DType(op.at("dtype").get<int>());
    c.op.epilogue = Epilogue(op.at("epilogue").get<int>());
    c.op.transpose_a = op.at("transpose_a").get<bool>();
    c.op.transpose_b = op.at("transpose_b").get<bool>();
    c.op.weight_layout = WeightLayout(op.value("weight_layout", 0));
    for (const json& s : j.at("shapes"))
      c.shapes.push_back({s.at(0).get<int64_t>(), s.at(1).get<int64_t>(), s.at(2).get<int64_t>(),
                          s.at(3).get<int64_t>()});
    if (j.contains("conv")) {
      for (const json& g : j.at("conv")) {
        Conv2dShape shape;
        int64_t* extents[] = {&shape.n, &shape.h, &shape.w, &shape.c, &shape.k,
                              &shape.r, &shape.s, &shape.p, &shape.q};
        int* attributes[] = {&shape.stride_h, &shape.stride_w,   &shape.pad_h,
                             &shape.pad_w,    &shape.dilation_h, &shape.dilation_w};
        for (size_t i = 0; i < 9; ++i) *extents[i] = g.at(i).get<int64_t>();
        for (size_t i = 0; i < 6; ++i) *attributes[i] = g.at(9 + i).get<int>();
        c.conv.push_back(shape);
      }
      if (c.conv.size() != c.shapes.size())
        throw std::invalid_argument("conv geometries do not match the shapes");
    }
    c.check_shapes = j.at("check_shapes").get<std::vector<int>>();
    for (int index : c.check_shapes)
      if (index < 0 || size_t(index) >= c.shapes.size())
        throw std::invalid_argument("check shape index out of range");
    if (j.contains("reference")) c.reference = kernel_from_json(j.at("reference"));
    return c;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("malformed measurement request: ") + e.what());
  }
}

json to_json(const WorkerResult& r) {
  return {{"status", to_string(r.status)},
          {"error", r.error},
          {"latency_us", r.latency_us},
          {"run", r.run}};
}

WorkerResult result_from_json(const json& j) {
  try {
    WorkerResult r;
    auto status = parse_measure_status(j.at("status").get<std::string>());
    if (!status) throw std::invalid_argument("unknown status in a worker reply");
    r.status = *status;
    r.error = j.at("error").get<std::string>();
    r.run = j.at("run").get<bool>();
    for (const json& v : j.at("latency_us"))
      r.latency_us.push_back(v.is_number() ? v.get<double>()
                                           : std::numeric_limits<double>::quiet_NaN());
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("malformed worker reply: ") + e.what());
  }
}

}  // namespace dietcode
