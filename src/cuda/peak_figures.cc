#include "cuda/peak_figures.h"

#include <cctype>

#include "common/error.h"

namespace dietcode {

std::vector<GpuSpec> shipped_configs() {
  std::vector<GpuSpec> specs;
  for (const std::string& id : list_gpu_specs()) {
    try {
      specs.push_back(load_gpu_spec(id));
    } catch (const UserError&) {
      // Skipped: see the header.
    }
  }
  return specs;
}

namespace {

// Lower-case alphanumeric words of a device name: "NVIDIA A100-SXM4-80GB" -> nvidia, a100,
// sxm4, 80gb.
std::vector<std::string> words(const std::string& name) {
  std::vector<std::string> result(1);
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      result.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!result.back().empty()) {
      result.emplace_back();
    }
  }
  if (result.back().empty()) result.pop_back();
  return result;
}

// Whether `id` is one word of the name or two adjacent words run together ("rtx" "4090").
bool names_model(const std::string& device_name, const std::string& id) {
  const std::vector<std::string> w = words(device_name);
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == id) return true;
    if (i + 1 < w.size() && w[i] + w[i + 1] == id) return true;
  }
  return false;
}

int cc(const GpuSpec& s) { return s.cc_major * 10 + s.cc_minor; }

// FP32 FMA lanes per SM: 64 on GP100, Volta, Turing and GA100; 128 on the others.
int fp32_lanes_per_sm(int cc) { return (cc == 60 || (cc >= 70 && cc < 80) || cc == 80) ? 64 : 128; }

// Dense fp16 tensor-core FLOP per clock per SM with fp32 accumulation, on data-centre parts.
int tensor_flop_per_clock_per_sm(int cc) {
  if (cc < 70) return 0;
  if (cc < 80) return 1024;   // Volta, Turing
  if (cc == 80) return 2048;  // A100
  if (cc < 90) return 1024;   // GA10x, Orin, Ada
  if (cc < 100) return 4096;  // Hopper
  if (cc < 110) return 8192;  // Blackwell data-centre
  return 1024;                // Blackwell consumer and later: the conservative guess
}

}  // namespace

const GpuSpec* match_shipped_config(const GpuSpec& device, const std::vector<GpuSpec>& shipped) {
  for (const GpuSpec& s : shipped) {
    if (cc(s) == cc(device) && s.name == device.name) return &s;
  }
  for (const GpuSpec& s : shipped) {
    if (cc(s) == cc(device) && names_model(device.name, s.id)) return &s;
  }
  return nullptr;
}

void estimate_peak_figures(GpuSpec& d) {
  const double giga_clocks = d.sms * d.clock_ghz;  // SM-clocks per ns
  d.fp32_tflops = giga_clocks * fp32_lanes_per_sm(cc(d)) * 2 / 1000.0;
  double tensor = giga_clocks * tensor_flop_per_clock_per_sm(cc(d)) / 1000.0;
  if (names_model(d.name, "geforce")) tensor /= 2;
  d.fp16_tensor_tflops = tensor;
  d.bf16_tensor_tflops = cc(d) >= 80 ? tensor : 0.0;  // bfloat16 tensor cores came with Ampere
}

void fill_peak_figures(GpuSpec& device, const std::vector<GpuSpec>& shipped, double measured_gbs) {
  if (const GpuSpec* model = match_shipped_config(device, shipped)) {
    // Compute peaks scale with SMs x clock; memory bandwidth does not, it is measured apart.
    const double scale = (device.sms * device.clock_ghz) / (model->sms * model->clock_ghz);
    device.fp32_tflops = model->fp32_tflops * scale;
    device.fp16_tensor_tflops = model->fp16_tensor_tflops * scale;
    device.bf16_tensor_tflops = model->bf16_tensor_tflops * scale;
    if (measured_gbs <= 0) device.mem_bandwidth_gbs = model->mem_bandwidth_gbs;
  } else {
    estimate_peak_figures(device);
  }
  if (measured_gbs > 0) device.mem_bandwidth_gbs = measured_gbs;
}

}  // namespace dietcode
