// Records <-> JSON, and the queries consumers run over a log. The file side (writer and
// reader) is in tuning_log_io.cc.
#include "search/tuning_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "common/version.h"

namespace dietcode {

namespace {

using nlohmann::json;

const json& required(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) throw UserError(fmt::format("missing \"{}\"", key));
  return *it;
}

std::string required_string(const json& j, const char* key) {
  const json& value = required(j, key);
  if (!value.is_string() || value.get_ref<const std::string&>().empty())
    throw UserError(fmt::format("{}: expected a non-empty string", key));
  return value.get<std::string>();
}

int64_t positive_integer(const json& value, const std::string& path) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1)
    throw UserError(path + ": expected a positive integer");
  return value.get<int64_t>();
}

}  // namespace

json TuningRecord::to_json() const {
  json j = {{"kind", "measurement"},
            {"workload", workload},
            {"op", op},
            {"mk", mk.to_json()},
            {"shape", shape},
            {"gemm", {{"batch", gemm.batch}, {"M", gemm.M}, {"N", gemm.N}, {"K", gemm.K}}},
            {"status", to_string(status)},
            {"device", device},
            {"arch", arch},
            {"simulated", simulated},
            {"l2", l2},
            {"tool_version", tool_version},
            {"timestamp", timestamp}};
  if (latency_us) j["latency_us"] = *latency_us;
  if (!error.empty()) j["error"] = error;
  if (registers) j["registers"] = *registers;
  if (constant_weights) j["weights"] = "constant";
  if (runoff > 0) j["runoff"] = runoff;
  return j;
}

TuningRecord TuningRecord::from_json(const json& j) {
  if (!j.is_object()) throw UserError("expected a JSON object");
  TuningRecord r;
  if (auto kind = j.find("kind"); kind != j.end() && *kind != "measurement")
    throw UserError("kind: expected \"measurement\"");
  r.workload = required_string(j, "workload");
  r.op = required_string(j, "op");
  const json& mk = required(j, "mk");
  try {
    r.mk = MicroKernel::from_json(mk);
  } catch (const UserError& e) {
    throw UserError(std::string("mk: ") + e.what());
  }
  const json& shape = required(j, "shape");
  if (!shape.is_object()) throw UserError("shape: expected an object of shape variable values");
  for (const auto& [name, value] : shape.items()) {
    if (!value.is_number_integer()) throw UserError("shape." + name + ": expected an integer");
    r.shape[name] = value.get<int64_t>();
  }
  const json& gemm = required(j, "gemm");
  if (!gemm.is_object()) throw UserError("gemm: expected an object {batch, M, N, K}");
  r.gemm.batch = positive_integer(required(gemm, "batch"), "gemm.batch");
  r.gemm.M = positive_integer(required(gemm, "M"), "gemm.M");
  r.gemm.N = positive_integer(required(gemm, "N"), "gemm.N");
  r.gemm.K = positive_integer(required(gemm, "K"), "gemm.K");

  std::string status = required_string(j, "status");
  auto parsed = parse_measure_status(status);
  if (!parsed) throw UserError(fmt::format("status: unknown status \"{}\"", status));
  r.status = *parsed;
  auto latency = j.find("latency_us");
  bool has_latency = latency != j.end() && !latency->is_null();
  if (r.status == MeasureStatus::kOk) {
    if (!has_latency) throw UserError("missing \"latency_us\" for status \"ok\"");
    if (!latency->is_number() || !(latency->get<double>() > 0) ||
        !std::isfinite(latency->get<double>()))
      throw UserError("latency_us: expected a positive number");
    r.latency_us = latency->get<double>();
  } else if (has_latency) {
    throw UserError(fmt::format("latency_us: not expected with status \"{}\"", status));
  }
  if (auto error = j.find("error"); error != j.end()) {
    if (!error->is_string()) throw UserError("error: expected a string");
    r.error = error->get<std::string>();
  }
  if (auto regs = j.find("registers"); regs != j.end()) {
    if (!regs->is_number_integer() || regs->get<int64_t>() < 0 || regs->get<int64_t>() > 65536)
      throw UserError("registers: expected a register count");
    r.registers = regs->get<int>();
  }
  r.device = required_string(j, "device");
  r.arch = required_string(j, "arch");
  const json& simulated = required(j, "simulated");
  if (!simulated.is_boolean()) throw UserError("simulated: expected true or false");
  r.simulated = simulated.get<bool>();
  r.l2 = "warm";
  if (auto l2 = j.find("l2"); l2 != j.end()) {
    if (!l2->is_string() || (*l2 != "flush" && *l2 != "warm"))
      throw UserError("l2: expected \"flush\" or \"warm\"");
    r.l2 = l2->get<std::string>();
  }
  if (auto weights = j.find("weights"); weights != j.end()) {
    if (!weights->is_string() || (*weights != "constant" && *weights != "per_call"))
      throw UserError("weights: expected \"constant\" or \"per_call\"");
    r.constant_weights = *weights == "constant";
  }
  if (auto runoff = j.find("runoff"); runoff != j.end()) {
    if (!runoff->is_number_integer() || runoff->get<int64_t>() < 1 ||
        runoff->get<int64_t>() > 1000000)
      throw UserError("runoff: expected the runoff's number, a positive integer");
    if (r.status != MeasureStatus::kOk) throw UserError("runoff: only a record with status \"ok\" has one");
    r.runoff = runoff->get<int>();
  }
  r.tool_version = required_string(j, "tool_version");
  r.timestamp = required_string(j, "timestamp");
  return r;
}

std::string iso8601_utc_now() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", text, int(now.tv_nsec / 1000000));
}

std::vector<TuningRecord> records_from_result(const std::string& workload,
                                              const MeasureInput& input,
                                              const MeasureResult& result,
                                              const DeviceIdentity& device) {
  std::optional<int> registers;
  const std::string built_for = compile_arch(input.kernel, device.arch);  // sm_90a for wgmma
  for (const auto& binary : input.compiled.binaries)
    if (binary.arch == built_for)
      for (const auto& res : binary.resources)
        if (res.entry == input.kernel.plan.entry) registers = res.registers;

  std::vector<TuningRecord> records;
  std::string timestamp = iso8601_utc_now();
  for (size_t i = 0; i < input.instances.size(); ++i) {
    const Instance& inst = input.instances[i];
    bool ok = result.status == MeasureStatus::kOk;
    double latency = i < result.latency_us.size() ? result.latency_us[i]
                                                  : std::numeric_limits<double>::quiet_NaN();
    if (ok && !(std::isfinite(latency) && latency > 0)) continue;  // not measured
    TuningRecord r;
    r.workload = workload;
    r.op = input.op->name;
    r.mk = input.mk;
    for (size_t v = 0; v < input.op->vars.size() && v < inst.values.size(); ++v)
      r.shape[input.op->vars[v]] = inst.values[v];
    r.gemm = inst.gemm;
    r.status = result.status;
    if (ok) r.latency_us = latency;
    r.error = result.error;
    r.registers = registers;
    r.device = device.name;
    r.arch = device.arch;
    r.simulated = device.simulated;
    r.l2 = device.l2;
    r.constant_weights = device.constant_weights;
    r.tool_version = tool_version();
    r.timestamp = timestamp;
    records.push_back(std::move(r));
  }
  return records;
}

bool RecordFilter::matches(const TuningRecord& r) const {
  return (!workload || r.workload == *workload) && (!op || r.op == *op) &&
         (!device || r.device == *device) && (!arch || r.arch == *arch) &&
         (!simulated || r.simulated == *simulated);
}

std::vector<const TuningRecord*> filter_records(const TuningLog& log, const RecordFilter& filter) {
  std::vector<const TuningRecord*> out;
  for (const auto& record : log.records)
    if (filter.matches(record)) out.push_back(&record);
  return out;
}

InstanceKey instance_key(const TuningRecord& record) {
  return {record.workload, record.op, record.shape};
}

std::map<InstanceKey, const TuningRecord*> best_per_instance(
    const std::vector<const TuningRecord*>& records) {
  std::map<InstanceKey, int> runoff;  // the latest runoff of each instance, if any
  for (const TuningRecord* r : records)
    if (r->runoff > 0) {
      int& latest = runoff[instance_key(*r)];
      latest = std::max(latest, r->runoff);
    }
  std::map<InstanceKey, const TuningRecord*> best;
  for (const TuningRecord* r : records) {
    if (r->status != MeasureStatus::kOk || !r->latency_us) continue;
    const InstanceKey key = instance_key(*r);
    if (auto it = runoff.find(key); it != runoff.end() && r->runoff != it->second) continue;
    auto [it, inserted] = best.emplace(key, r);
    if (!inserted && *r->latency_us < *it->second->latency_us) it->second = r;
  }
  return best;
}

std::set<MeasuredPair> measured_pairs(const std::vector<const TuningRecord*>& records) {
  std::set<MeasuredPair> pairs;
  for (const TuningRecord* r : records) pairs.emplace(r->mk.key(), instance_key(*r));
  return pairs;
}

}  // namespace dietcode
