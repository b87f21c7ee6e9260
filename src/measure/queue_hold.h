// Keeps the GPU busy while the measurer enqueues timed launches, so that the launches run back
// to back and the CUDA events around each one time the GPU's work, not the host's launch
// latency. Without it, a kernel of a few microseconds is timed with the ~2-5 us the host needs
// to enqueue it (and split-K's second launch pays that twice), which biases the tuner against
// small kernels and split-K at small M: exactly where the choice matters.
//
// The hold is one thread spinning on %globaltimer for a given time, written as PTX for sm_75
// so that every GPU dietcode supports JIT-compiles it at module load: no NVRTC call, no arch
// to pick. QueueHoldPacer sizes each hold from how long the host took to enqueue the last
// batch, and batches are kept small enough that the launch queue never fills (a full queue
// blocks the host until the GPU drains it, which would reintroduce the latency).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace dietcode {

// The PTX of `dietcode_queue_hold(unsigned long long nanoseconds)`.
const char* queue_hold_ptx();
inline constexpr char kQueueHoldEntry[] = "dietcode_queue_hold";

// How long to hold the queue for the next batch, from the host time the previous one took to
// enqueue: twice that (enqueue times vary), at least 20 us, at most 50 ms.
class QueueHoldPacer {
 public:
  static constexpr int kMaxLaunchesPerHold = 64;  // timed launches enqueued behind one hold
  static constexpr double kFirstHoldUs = 2000;    // before anything was enqueued

  double next_hold_us() const { return hold_us_; }
  void enqueued(double host_us);  // the host time the batch behind the last hold took

 private:
  double hold_us_ = kFirstHoldUs;
};

}  // namespace dietcode
