#include "bench/cpu_im2col.h"

#include <algorithm>

namespace dietcode {

bool conv_is_pointwise(const Conv2dShape& c) {
  return c.r == 1 && c.s == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_h == 0 && c.pad_w == 0;
}

void im2col_rows(const Conv2dShape& c, const float* x, float* columns, int64_t begin, int64_t end) {
  const int64_t row_length = c.r * c.s * c.c;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t q = row % c.q, p = (row / c.q) % c.p, n = row / (c.q * c.p);
    float* out = columns + row * row_length;
    for (int64_t r = 0; r < c.r; ++r) {
      const int64_t ih = p * c.stride_h - c.pad_h + r * c.dilation_h;
      for (int64_t s = 0; s < c.s; ++s, out += c.c) {
        const int64_t iw = q * c.stride_w - c.pad_w + s * c.dilation_w;
        if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) {
          std::fill(out, out + c.c, 0.0f);
        } else {
          const float* in = x + ((n * c.h + ih) * c.w + iw) * c.c;
          std::copy(in, in + c.c, out);
        }
      }
    }
  }
}

}  // namespace dietcode
