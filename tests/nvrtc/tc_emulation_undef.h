// Clears the tensor-core tunables, the shared header's guard and the entry renames between two
// inclusions of a template in an emulated test. Deliberately without an include guard.
#undef DIETCODE_TC_H_
#undef DTYPE
#undef EPILOGUE
#undef WARPS_M
#undef WARPS_N
#undef WM
#undef WN
#undef BK
#undef STAGES
#undef SPLITK
#undef MIN_BLOCKS
#undef B_K_CONTIGUOUS
#undef STATIC_N
#undef STATIC_K
#undef dietcode_dense_tc
#undef dietcode_dense_tc_reduce
#undef DIETCODE_WGMMA_H_
#undef DC_WGMMA_TYPE
#undef WG_M
#undef WGM
#undef BN
#undef dietcode_dense_wgmma
#undef dietcode_dense_wgmma_reduce
#undef PRODUCER
#undef EPI_SMEM
#undef M_FASTEST
