#include "measure/conv2d_shape.h"

#include <stdexcept>

#include "workload/op_layout.h"

namespace dietcode {

bool Conv2dShape::operator==(const Conv2dShape& o) const {
  return n == o.n && h == o.h && w == o.w && c == o.c && k == o.k && r == o.r && s == o.s &&
         p == o.p && q == o.q && stride_h == o.stride_h && stride_w == o.stride_w &&
         pad_h == o.pad_h && pad_w == o.pad_w && dilation_h == o.dilation_h &&
         dilation_w == o.dilation_w;
}

Conv2dShape conv2d_shape(const OpSpec& op, const std::vector<int64_t>& values) {
  if (op.kind != OpKind::kConv2d)
    throw std::invalid_argument("conv2d_shape: op " + op.name + " is not a conv2d");
  const auto dims = evaluate_dims(op, values);  // also P and Q
  Conv2dShape g;
  g.n = dims.at("N"), g.h = dims.at("H"), g.w = dims.at("W"), g.c = dims.at("C");
  g.k = dims.at("K"), g.r = dims.at("R"), g.s = dims.at("S");
  g.p = dims.at("P"), g.q = dims.at("Q");
  g.stride_h = op.stride[0], g.stride_w = op.stride[1];
  g.pad_h = op.pad[0], g.pad_w = op.pad[1];
  g.dilation_h = op.dilation[0], g.dilation_w = op.dilation[1];
  return g;
}

Conv2dShape make_conv2d_shape(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r,
                              int64_t s, int stride, int pad, int dilation) {
  Conv2dShape g;
  g.n = n, g.h = h, g.w = w, g.c = c, g.k = k, g.r = r, g.s = s;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = pad;
  g.dilation_h = g.dilation_w = dilation;
  if (!conv_output_extent(h, pad, dilation, r, stride, &g.p) ||
      !conv_output_extent(w, pad, dilation, s, stride, &g.q))
    throw std::invalid_argument("make_conv2d_shape: the output is empty");
  return g;
}

}  // namespace dietcode
