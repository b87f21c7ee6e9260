#include "pack/log_records.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace dietcode {

using nlohmann::json;

namespace {

// Throws std::runtime_error("what is wrong") for a record it cannot use.
LogMeasurement parse_record(const json& j) {
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  LogMeasurement m;
  auto text = [&](const char* key, bool required) -> std::string {
    if (!j.contains(key)) {
      if (required) throw std::runtime_error(std::string("no \"") + key + "\"");
      return "";
    }
    if (!j[key].is_string()) throw std::runtime_error(std::string(key) + ": expected a string");
    return j[key].get<std::string>();
  };
  m.workload = text("workload", false);
  m.op = text("op", true);
  m.status = text("status", true);
  m.arch = text("arch", false);
  m.device = text("device", false);
  if (!j.contains("mk")) throw std::runtime_error("no \"mk\"");
  try {
    m.mk = MicroKernel::from_json(j["mk"]);
  } catch (const UserError& e) {
    throw std::runtime_error(std::string("mk: ") + e.what());
  }
  if (!j.contains("shape") || !j["shape"].is_object())
    throw std::runtime_error("shape: expected {VAR: VALUE, ...}");
  for (const auto& [var, value] : j["shape"].items()) {
    if (!value.is_number_integer())
      throw std::runtime_error("shape." + var + ": expected an integer");
    m.shape[var] = value.get<int64_t>();
  }
  if (j.contains("gemm") && j["gemm"].is_object()) {
    const char* keys[] = {"batch", "M", "N", "K"};
    m.has_gemm = true;
    for (int i = 0; i < 4; ++i) {
      if (!j["gemm"].contains(keys[i]) || !j["gemm"][keys[i]].is_number_integer())
        throw std::runtime_error(std::string("gemm.") + keys[i] + ": expected an integer");
      m.gemm[i] = j["gemm"][keys[i]].get<int64_t>();
    }
  }
  if (m.status == "ok") {
    if (!j.contains("latency_us") || !j["latency_us"].is_number() ||
        !(j["latency_us"].get<double>() > 0))
      throw std::runtime_error("latency_us: expected a positive number with status ok");
    m.latency_us = j["latency_us"].get<double>();
  }
  if (j.contains("simulated")) {
    if (!j["simulated"].is_boolean()) throw std::runtime_error("simulated: expected true/false");
    m.simulated = j["simulated"].get<bool>();
  }
  return m;
}

}  // namespace

std::vector<LogMeasurement> read_log_measurements(const std::string& path,
                                                  std::vector<std::string>& warnings) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": no such tuning log");
  std::vector<LogMeasurement> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      if (j.is_object() && j.contains("kind") && j["kind"] != "measurement") continue;
      out.push_back(parse_record(j));
      out.back().line = number;
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (dynamic_cast<const json::parse_error*>(&e)) why = "not valid JSON (a torn line?)";
      warnings.push_back(path + ":" + std::to_string(number) + ": skipped: " + why);
    }
  }
  return out;
}

}  // namespace dietcode
