/* The activation of the fused epilogue, shared by every tiled template: EPILOGUE 2 and 3 apply
 * relu, 4 and 5 GELU in its tanh form, in fp32; the others none (any bias is added before,
 * by the template, which knows its bias type). Include after EPILOGUE has its default.
 * No include guard, like dietcode_splitk.h: a host-emulation test includes a template several
 * times, each in its own namespace; every template includes this file exactly once. */

namespace dc {

__device__ __forceinline__ float activate(float v) {
#if EPILOGUE == 2 || EPILOGUE == 3
  v = fmaxf(v, 0.0f);
#elif EPILOGUE == 4 || EPILOGUE == 5
  v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
  return v;
}

}  // namespace dc
