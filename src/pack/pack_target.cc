#include "pack/pack_target.h"

namespace dietcode {

const PackTarget& cuda_pack_target();  // pack_target_cuda.cc
const PackTarget& cpu_pack_target();   // pack_target_cpu.cc

const PackTarget& pack_target(Target target) {
  return target == Target::kCpu ? cpu_pack_target() : cuda_pack_target();
}

}  // namespace dietcode
