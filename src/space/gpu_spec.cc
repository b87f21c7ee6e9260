#include "space/gpu_spec.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/paths.h"

namespace dietcode {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The config file's keys are the struct's fields. Limits are required: a config that silently
// inherited another GPU's shared memory or SM count would enumerate kernels that cannot run.
// Only the two figures every NVIDIA GPU since Kepler shares may be left out.
struct IntField {
  const char* key;
  int GpuSpec::*member;
  int min;
  bool required;
};

const IntField kIntFields[] = {
    {"cc_major", &GpuSpec::cc_major, 1, true},
    {"cc_minor", &GpuSpec::cc_minor, 0, true},
    {"sms", &GpuSpec::sms, 1, true},
    {"warp_size", &GpuSpec::warp_size, 1, false},
    {"max_threads_per_block", &GpuSpec::max_threads_per_block, 1, true},
    {"max_threads_per_sm", &GpuSpec::max_threads_per_sm, 1, true},
    {"max_blocks_per_sm", &GpuSpec::max_blocks_per_sm, 1, true},
    {"regs_per_sm", &GpuSpec::regs_per_sm, 1, true},
    {"regs_per_block", &GpuSpec::regs_per_block, 1, true},
    {"max_regs_per_thread", &GpuSpec::max_regs_per_thread, 1, false},
    {"smem_per_block", &GpuSpec::smem_per_block, 1, true},
    {"smem_per_block_optin", &GpuSpec::smem_per_block_optin, 1, true},
    {"smem_per_sm", &GpuSpec::smem_per_sm, 1, true},
    {"l2_bytes", &GpuSpec::l2_bytes, 1, true},
};

// Peak figures. A tensor figure may be 0: the GPU has no tensor cores for that type (T4 and
// bfloat16), and the search then offers no tensor-core kernel for it.
struct NumberField {
  const char* key;
  double GpuSpec::*member;
  bool zero_allowed;
};

const NumberField kNumberFields[] = {
    {"clock_ghz", &GpuSpec::clock_ghz, false},
    {"fp32_tflops", &GpuSpec::fp32_tflops, false},
    {"fp16_tensor_tflops", &GpuSpec::fp16_tensor_tflops, true},
    {"bf16_tensor_tflops", &GpuSpec::bf16_tensor_tflops, true},
    {"mem_bandwidth_gbs", &GpuSpec::mem_bandwidth_gbs, false},
};

fs::path gpu_config_dir() { return data_dir() / "configs" / "gpus"; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> known_keys() {
  std::vector<std::string> keys{"name"};
  for (const auto& f : kIntFields) keys.push_back(f.key);
  for (const auto& f : kNumberFields) keys.push_back(f.key);
  return keys;
}

std::string unknown_key_message(const std::string& file, const std::string& key) {
  std::string best;
  size_t best_distance = 4;  // a typo, not a different word
  for (const std::string& known : known_keys()) {
    size_t d = edit_distance(key, known);
    if (d < best_distance) best_distance = d, best = known;
  }
  std::string message = file + ": " + key + ": unknown key";
  if (!best.empty()) message += " (did you mean " + best + "?)";
  return message;
}

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& what) {
  throw UserError(file + ": " + key + ": " + what);
}

void require_at_least(const std::string& file, const GpuSpec& s, int GpuSpec::*big,
                      const char* big_key, int GpuSpec::*small, const char* small_key) {
  if (s.*big < s.*small) {
    fail(file, big_key,
         std::to_string(s.*big) + " is less than " + small_key + " (" + std::to_string(s.*small) +
             ")");
  }
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

}  // namespace

std::string GpuSpec::arch() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

json gpu_spec_to_json(const GpuSpec& spec) {
  json j = {{"name", spec.name}};
  for (const auto& f : kIntFields) j[f.key] = spec.*f.member;
  for (const auto& f : kNumberFields) j[f.key] = spec.*f.member;
  return j;
}

GpuSpec parse_gpu_spec(const json& j, const std::string& file, const std::string& id) {
  if (!j.is_object()) {
    throw UserError(file + ": expected a JSON object of GPU limits, got " + j.dump());
  }
  const std::vector<std::string> keys = known_keys();
  for (const auto& item : j.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      throw UserError(unknown_key_message(file, item.key()));
    }
  }

  GpuSpec spec;
  spec.id = id;
  if (!j.contains("name")) fail(file, "name", "required key is missing");
  const json& name = j.at("name");
  if (!name.is_string() || name.get<std::string>().empty()) {
    fail(file, "name", "expected the device name as a non-empty string, got " + name.dump());
  }
  spec.name = name.get<std::string>();

  for (const auto& f : kIntFields) {
    if (!j.contains(f.key)) {
      if (f.required) fail(file, f.key, "required key is missing");
      continue;
    }
    const json& v = j.at(f.key);
    bool ok = v.is_number_integer() && v.get<int64_t>() >= f.min && v.get<int64_t>() <= INT_MAX;
    if (!ok) {
      fail(file, f.key,
           std::string(f.min > 0 ? "expected a positive integer" : "expected an integer >= 0") +
               ", got " + v.dump());
    }
    spec.*f.member = static_cast<int>(v.get<int64_t>());
  }
  for (const auto& f : kNumberFields) {
    if (!j.contains(f.key)) fail(file, f.key, "required key is missing");
    const json& v = j.at(f.key);
    bool ok = v.is_number() && (f.zero_allowed ? v.get<double>() >= 0 : v.get<double>() > 0);
    if (!ok) {
      fail(file, f.key,
           std::string(f.zero_allowed ? "expected a number >= 0 (0: no such tensor cores)"
                                      : "expected a positive number") +
               ", got " + v.dump());
    }
    spec.*f.member = v.get<double>();
  }

  // Limits that contradict each other mean a typo, and would make the space empty or wrong.
  require_at_least(file, spec, &GpuSpec::smem_per_block_optin, "smem_per_block_optin",
                   &GpuSpec::smem_per_block, "smem_per_block");
  require_at_least(file, spec, &GpuSpec::smem_per_sm, "smem_per_sm", &GpuSpec::smem_per_block_optin,
                   "smem_per_block_optin");
  require_at_least(file, spec, &GpuSpec::max_threads_per_sm, "max_threads_per_sm",
                   &GpuSpec::max_threads_per_block, "max_threads_per_block");
  require_at_least(file, spec, &GpuSpec::regs_per_sm, "regs_per_sm", &GpuSpec::regs_per_block,
                   "regs_per_block");
  return spec;
}

std::vector<std::string> list_gpu_specs() {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(gpu_config_dir(), ec)) {
    if (entry.path().extension() == ".json") ids.push_back(entry.path().stem().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

GpuSpec load_gpu_spec(const std::string& id_or_path) {
  const bool is_path =
      id_or_path.find('/') != std::string::npos || fs::path(id_or_path).extension() == ".json";
  fs::path path;
  if (is_path) {
    path = id_or_path;
    if (!fs::exists(path)) throw UserError(id_or_path + ": no such GPU config file");
  } else {
    const std::string id = lower(id_or_path);
    path = gpu_config_dir() / (id + ".json");
    if (id.empty() || !fs::exists(path)) {
      const std::vector<std::string> known = list_gpu_specs();
      if (known.empty()) {
        throw EnvironmentError("unknown GPU \"" + id_or_path + "\": no GPU configs in " +
                               gpu_config_dir().string());
      }
      throw UserError("unknown GPU \"" + id_or_path + "\": known GPUs are " + join(known) +
                      ", or give the path of a GPU config file");
    }
  }

  const std::string file = path.string();
  std::ifstream in(path);
  if (!in) throw UserError(file + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, ..." -> "parse error at line 3"
    std::string what = e.what();
    size_t bracket = what.find("] ");
    throw UserError(file + ": invalid JSON: " +
                    (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  return parse_gpu_spec(j, file, path.stem().string());
}

}  // namespace dietcode
