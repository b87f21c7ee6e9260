// One build of the templates' dense kernels (the VARIANTS list, for N = NN, K = KK), exported
// for idle_ab.cc. Build: g++ -std=c++17 -O3 -march=x86-64-v3 -mtune=generic -ffp-contract=fast
// -fPIC -shared -Itemplates -DNN=768 -DKK=768 -DVARIANTS='"proj.inc"' kern.cc -o proj.so
#include "x86/ops_x86.h"
using namespace dc_x86;
using Fn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
#define WB(...) &run_wbcast<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
#define BL(...) &run<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
struct Kn { const char* name; Fn fn; };
static Kn kernels[] = {
#include VARIANTS
};
extern "C" Kn* variants(int* n) { *n = sizeof(kernels) / sizeof(kernels[0]); return kernels; }
