#include "cuda/l2_flush.h"

#include <algorithm>

#include "cuda/driver.h"

namespace dietcode {

const char* l2_flush_ptx() {
  return R"(.version 7.0
.target sm_75
.address_size 64

.visible .entry dietcode_l2_flush(.param .u64 dietcode_l2_flush_buffer,
                                  .param .u64 dietcode_l2_flush_words,
                                  .param .u32 dietcode_l2_flush_value)
{
	.reg .pred 	%p1;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [dietcode_l2_flush_buffer];
	ld.param.u64 	%rd2, [dietcode_l2_flush_words];
	ld.param.u32 	%r1, [dietcode_l2_flush_value];
	cvta.to.global.u64 	%rd1, %rd1;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mov.u32 	%r5, %nctaid.x;
	mul.wide.u32 	%rd3, %r2, %r3;
	cvt.u64.u32 	%rd4, %r4;
	add.s64 	%rd3, %rd3, %rd4;
	mul.wide.u32 	%rd5, %r5, %r3;
$L__next:
	setp.ge.s64 	%p1, %rd3, %rd2;
	@%p1 bra 	$L__done;
	shl.b64 	%rd6, %rd3, 2;
	add.s64 	%rd7, %rd1, %rd6;
	st.global.u32 	[%rd7], %r1;
	add.s64 	%rd3, %rd3, %rd5;
	bra.uni 	$L__next;
$L__done:
	ret;
}
)";
}

unsigned L2FlushGrid::blocks(int64_t words) {
  return unsigned(std::clamp<int64_t>((words + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

void launch_l2_flush(CUfunction flush, CUstream stream, CUdeviceptr buffer, int64_t bytes,
                     uint32_t value) {
  long long words = bytes / 4;
  void* params[] = {&buffer, &words, &value};
  check(driver().cuLaunchKernel(flush, L2FlushGrid::blocks(words), 1, 1, L2FlushGrid::kThreads, 1,
                                1, 0, stream, params, nullptr),
        "cuLaunchKernel(L2 flush)");
}

}  // namespace dietcode
