#include "search/log_merge.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "common/error.h"

namespace dietcode {

namespace {

using nlohmann::json;

// The identity of a measurement: records with equal keys measured the same thing.
// A runoff's time is a measurement of its own (search/runoff.h), never merged with the
// ordinary one of the same pair.
using RecordKey = std::tuple<std::string, std::string, std::string, std::string,
                             std::map<std::string, int64_t>, std::string, int>;

RecordKey record_key(const TuningRecord& r) {
  return {r.workload, r.op, r.device, r.arch, r.shape, r.mk.key(), r.runoff};
}

std::string device_label(const TuningRecord& r) { return fmt::format("{} ({})", r.device, r.arch); }

// The whole record's text: the last tie-breaker, so the choice never depends on input order.
std::string canonical(const TuningRecord& r) {
  return r.to_json().dump(-1, ' ', false, json::error_handler_t::replace);
}

// Refuses inputs that must not be merged; see the header for why.
void check_compatible(const std::vector<MergeInput>& inputs, bool force) {
  const MergeInput* first_input = nullptr;
  const TuningRecord* first = nullptr;
  const MergeInput* simulated_in = nullptr;
  const MergeInput* real_in = nullptr;
  for (const MergeInput& in : inputs) {
    for (const TuningRecord& r : in.log.records) {
      (r.simulated ? simulated_in : real_in) = &in;
      if (simulated_in && real_in)
        throw UserError(
            fmt::format("dietcode merge: {} has simulated records (a model of a GPU) and {} has "
                        "measurements of a real one; they are never merged",
                        simulated_in->path, real_in->path));
      if (!first) {
        first = &r;
        first_input = &in;
      } else if (!force && &in != first_input &&
                 (r.device != first->device || r.arch != first->arch)) {
        throw UserError(fmt::format(
            "dietcode merge: {} has records of {} but {} has records of {}; use --force to "
            "merge logs of different GPUs",
            first_input->path, device_label(*first), in.path, device_label(r)));
      }
    }
  }
}

// Of a key's records, the one to keep: the median ok record, else the first failure.
const TuningRecord* pick(std::vector<const TuningRecord*>& group, bool& conflict) {
  std::vector<const TuningRecord*> ok;
  for (const TuningRecord* r : group)
    if (r->status == MeasureStatus::kOk && r->latency_us) ok.push_back(r);
  auto by_text = [](const TuningRecord* a, const TuningRecord* b) {
    return canonical(*a) < canonical(*b);
  };
  if (ok.empty()) {
    std::sort(group.begin(), group.end(), by_text);
    return group.front();
  }
  std::sort(ok.begin(), ok.end(), [&](const TuningRecord* a, const TuningRecord* b) {
    if (*a->latency_us != *b->latency_us) return *a->latency_us < *b->latency_us;
    return by_text(a, b);
  });
  conflict = *ok.front()->latency_us != *ok.back()->latency_us;
  return ok[(ok.size() - 1) / 2];
}

}  // namespace

MergeResult merge_tuning_logs(const std::vector<MergeInput>& inputs, bool force) {
  check_compatible(inputs, force);
  MergeResult result;
  std::map<RecordKey, std::vector<const TuningRecord*>> groups;
  std::map<std::string, const json*> others;  // text -> line: once each, sorted
  for (const MergeInput& in : inputs) {
    for (const TuningRecord& r : in.log.records) groups[record_key(r)].push_back(&r);
    result.records_read += in.log.records.size();
    for (const json& line : in.log.others)
      others.emplace(line.dump(-1, ' ', false, json::error_handler_t::replace), &line);
  }
  for (auto& [key, group] : groups) {
    bool conflict = false;
    result.records.push_back(*pick(group, conflict));
    if (conflict) ++result.conflicts;
  }
  for (const auto& [text, line] : others) result.others.push_back(*line);
  return result;
}

MergeResult merge_log_files(const std::vector<std::string>& paths, bool force,
                            std::vector<std::string>& warnings) {
  std::vector<MergeInput> inputs;
  for (const std::string& path : paths) inputs.push_back({path, read_tuning_log(path, warnings)});
  return merge_tuning_logs(inputs, force);
}

std::string render_merged_log(const MergeResult& merged) {
  std::string text;
  auto add = [&text](const json& j) {
    text += j.dump(-1, ' ', false, json::error_handler_t::replace);
    text += '\n';
  };
  for (const TuningRecord& r : merged.records) add(r.to_json());
  for (const json& line : merged.others) add(line);
  return text;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
  auto fail = [&](int error) {
    ::unlink(temp.c_str());
    throw EnvironmentError(fmt::format("{}: cannot write: {}", path, std::strerror(error)));
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw EnvironmentError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      ::close(fd);
      fail(error);
    }
    done += size_t(n);
  }
  // Synced before the rename: after a power cut the name points at all of the new text.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int error = errno;
    ::close(fd);
    fail(error);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace dietcode
