#include "measure/queue_hold.h"

#include <algorithm>

namespace dietcode {

const char* queue_hold_ptx() {
  return R"(.version 7.0
.target sm_75
.address_size 64

.visible .entry dietcode_queue_hold(.param .u64 dietcode_queue_hold_param_0)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [dietcode_queue_hold_param_0];
	mov.u64 	%rd2, %globaltimer;
$L__spin:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__spin;
	ret;
}
)";
}

void QueueHoldPacer::enqueued(double host_us) {
  hold_us_ = std::clamp(2 * host_us, 20.0, 50000.0);
}

}  // namespace dietcode
