// Host im2col for the OpenBLAS conv2d baseline: NHWC input -> the column matrix
// [N*P*Q][R*S*C] that one sgemm with the KRSC weights turns into the NPQK output. The same
// layout as bench's GPU im2col kernel (im2col_index.h), written row by row here so each row is
// contiguous copies of C channels instead of one index computation per element.
#pragma once

#include <cstdint>

#include "measure/conv2d_shape.h"

namespace dietcode {

// Whether the conv is a plain GEMM on its input (1x1 filter, stride 1, no padding): the input
// is then its own column matrix and im2col is skipped.
bool conv_is_pointwise(const Conv2dShape& c);

// Rows [begin, end) of the column matrix of `x` into `columns` (row r at columns + r * R*S*C):
// row (n, p, q), column (r, s, c); zeros where the filter reaches into the padding.
void im2col_rows(const Conv2dShape& c, const float* x, float* columns, int64_t begin, int64_t end);

}  // namespace dietcode
