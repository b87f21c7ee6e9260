// Clears the dense_f32 tunables and entry renames between two inclusions of the template in
// dense_f32_emulated_test.cc. Deliberately without an include guard.
#undef WARPS_M
#undef WARPS_N
#undef THREADS_M
#undef THREADS_N
#undef TM
#undef TN
#undef BK
#undef VEC
#undef STAGES
#undef SPLITK
#undef PRELOAD
#undef EPILOGUE
#undef STATIC_N
#undef STATIC_K
#undef dietcode_dense_f32
#undef dietcode_dense_f32_reduce
