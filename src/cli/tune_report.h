// What `dietcode tune` shows: progress while it runs (a one-line bar with ETA on a terminal,
// plain lines otherwise, nothing with -q) and the summary at the end, per op, as a table or as
// JSON. Numbers from the simulated device are labelled so wherever they appear.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "search/joint_search.h"

namespace dietcode::cli {

class TuneProgress {
 public:
  enum class Mode { kBar, kLines, kQuiet };
  // verbose adds a line per round in bar mode too.
  TuneProgress(Mode mode, std::FILE* out, bool verbose)
      : mode_(mode), out_(out), verbose_(verbose) {}
  ~TuneProgress() { finish(); }

  void update(const SearchProgress& progress);
  // Clears the bar, so what follows starts on a clean line.
  void finish();

 private:
  void draw(const SearchProgress& progress);
  void line(const std::string& text);

  Mode mode_;
  std::FILE* out_;
  bool verbose_;
  size_t bar_width_ = 0;  // characters of the bar on screen now; 0 when none
};

// "41.23 us" style round of the weighted-mean latency; "-" when unknown.
std::string format_latency_us(double us);

// The summary table, with a total line and the simulated label when it applies.
std::string summary_text(const JointSearchResult& result, const DeviceIdentity& device);

// The machine-readable summary (--json).
nlohmann::ordered_json summary_json(const JointSearchResult& result, const Workload& workload,
                                    const DeviceIdentity& device, const std::string& log_path,
                                    uint64_t seed);

}  // namespace dietcode::cli
