// Budgets of a tuning run: the wall-clock deadline shared by all ops, durations as users write
// them ("90s", "10m", "1h30m"), and the per-op stopping rule (trials spent, or no improvement
// for a number of rounds).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "search/search_options.h"

namespace dietcode {

// "90s", "10m", "1.5h", "1h30m", "250ms", or a bare number of seconds ("600"). nullopt for
// anything else, zero or negative.
std::optional<double> parse_duration_seconds(const std::string& text);

// "1m 30s", "45.2s", "2h 05m": for progress lines and summaries.
std::string format_duration(double seconds);

// Wall seconds since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

// Wall time since a run started, against an optional limit.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(double limit_seconds = 0);  // 0: none

  double elapsed() const;
  bool limited() const { return limit_ > 0; }
  double limit() const { return limit_; }
  double remaining() const;  // +infinity when not limited
  bool expired() const { return limited() && elapsed() >= limit_; }
  // The same clock with `seconds` less to run: the share of a budget left to work that must
  // end before something else, which has to fit in the same budget, begins.
  Deadline earlier_by(double seconds) const;

 private:
  Clock::time_point start_;
  double limit_;
};

// Why an op's search stopped.
// kListed: every kernel of tune --kernels that the op can time was timed.
enum class StopReason { kNone, kTrials, kTime, kNoImprovement, kExhausted, kListed };
const char* to_string(StopReason reason);  // "", "trial budget spent", ...

// The early-stopping rule over rounds: an op stalls when a round lowers its weighted-mean
// latency by less than min_improvement (relative); patience stalled rounds in a row stop it.
class ImprovementTracker {
 public:
  ImprovementTracker(int patience, double min_improvement)
      : patience_(patience), min_improvement_(min_improvement) {}
  // Records a round's weighted-mean latency; true when the op should stop.
  bool stalled_after(double weighted_mean_us);
  int stalled_rounds() const { return stalled_; }
  // A fresh start of the search: patience counts again from now, against the best so far.
  void restart() { stalled_ = 0; }

 private:
  int patience_;
  double min_improvement_;
  std::optional<double> best_;
  int stalled_ = 0;
};

}  // namespace dietcode
