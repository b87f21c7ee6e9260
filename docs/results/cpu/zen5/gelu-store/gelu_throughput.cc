#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>
typedef __m256 V;
static inline V exp_cephes(V x) {
  x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  const V fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  V y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i n =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(n));
}
static inline V gelu_cur(V x) {
  const V x2 = _mm256_mul_ps(x, x);
  const V t = _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f), _mm256_set1_ps(1.0f));
  const V z = _mm256_mul_ps(_mm256_mul_ps(x, t), _mm256_set1_ps(-1.5957691216057308f));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_cephes(z)));
}
// 2^t, t clamped to [-126, 126]: n = round(t), f = t - n in [-0.5, 0.5], 2^f by a degree-6
// polynomial
static inline V exp2_poly(V t) {
  t = _mm256_min_ps(t, _mm256_set1_ps(126.0f));
  t = _mm256_max_ps(t, _mm256_set1_ps(-126.0f));
  const V n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const V f = _mm256_sub_ps(t, n);
  V y = _mm256_set1_ps(1.5353362e-4f);
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.3398874e-3f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(9.6181291e-3f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(5.5504109e-2f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(2.4022651e-1f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(6.9314718e-1f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), e));
}
static inline V gelu_nodiv(V x) {
  const V x2 = _mm256_mul_ps(x, x);
  const V t =
      _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f * -2.302208198f), _mm256_set1_ps(-2.302208198f));
  const V z = _mm256_mul_ps(x, t);
  return _mm256_mul_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp2_poly(z)));
}
static inline V gelu_rcp(V x) {
  const V x2 = _mm256_mul_ps(x, x);
  const V t =
      _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f * -2.302208198f), _mm256_set1_ps(-2.302208198f));
  const V z = _mm256_mul_ps(x, t);
  const V d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp2_poly(z));
  V r = _mm256_rcp_ps(d);
  r = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
  return _mm256_mul_ps(x, r);
}
static inline V gelu_exp2(V x) {
  const V x2 = _mm256_mul_ps(x, x);
  const V t = _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f * -2.302208198f),
                              _mm256_set1_ps(-2.302208198f));  // -2 sqrt(2/pi) log2 e
  const V z = _mm256_mul_ps(x, t);
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp2_poly(z)));
}
template <V (*G)(V)>
__attribute__((noinline)) double bench(float* buf, int n, int reps) {
  auto s = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < n; i += 96) {
      V v[12];
      for (int j = 0; j < 12; ++j) v[j] = _mm256_load_ps(buf + i + 8 * j);
      for (int j = 0; j < 12; ++j) v[j] = G(v[j]);
      for (int j = 0; j < 12; ++j)
        _mm256_store_ps(buf + i + 8 * j, _mm256_mul_ps(v[j], _mm256_set1_ps(1.0001f)));
    }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - s).count() /
         (double(n) / 8 * reps);
}
float ref(double x) {
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return float(x / (1 + std::exp(-2 * u)));
}
template <V (*G)(V)>
void acc(const char* name, double LIM = 12) {
  double worst = 0, wx = 0;
  for (double x = -LIM; x < LIM; x += 1e-4) {
    alignas(32) float in[8], out[8];
    for (int l = 0; l < 8; ++l) in[l] = float(x);
    _mm256_store_ps(out, G(_mm256_load_ps(in)));
    double r = ref(float(x));
    double e = std::fabs(out[0] - r) / std::max(std::fabs(r), 1e-30);
    if (std::fabs(r) > 1e-30 && e > worst) worst = e, wx = x;
  }
  printf("%-10s worst rel err %.2e at x=%.4f\n", name, worst, wx);
}
int main() {
  const int n = 96 * 32;
  alignas(64) static float buf[96 * 32];
  for (int i = 0; i < n; ++i) buf[i] = (i % 97) * 0.01f - 0.5f;
  acc<gelu_cur>("current");
  acc<gelu_exp2>("exp2");
  acc<gelu_cur>("current5", 5);
  acc<gelu_exp2>("exp2-5", 5);
  for (int t = 0; t < 3; ++t)
    printf("ns per vector: current %.3f  exp2 %.3f nodiv %.3f rcp %.3f\n",
           bench<gelu_cur>(buf, n, 20000), bench<gelu_exp2>(buf, n, 20000),
           bench<gelu_nodiv>(buf, n, 20000), bench<gelu_rcp>(buf, n, 20000));
}
