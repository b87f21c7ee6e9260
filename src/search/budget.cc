#include "search/budget.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace dietcode {

std::optional<double> parse_duration_seconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double total = 0;
  size_t pos = 0;
  bool any = false;
  while (pos < text.size()) {
    const char* begin = text.c_str() + pos;
    if (!std::isdigit(static_cast<unsigned char>(*begin)) && *begin != '.') return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(value)) return std::nullopt;
    pos = size_t(end - text.c_str());
    size_t unit_end = pos;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end])))
      ++unit_end;
    const std::string unit = text.substr(pos, unit_end - pos);
    pos = unit_end;
    double scale = 0;
    if (unit.empty()) {
      if (any || pos != text.size()) return std::nullopt;  // only "600" alone is bare seconds
      scale = 1;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "m" || unit == "min") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else {
      return std::nullopt;
    }
    total += value * scale;
    any = true;
  }
  if (!(total > 0)) return std::nullopt;
  return total;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  const auto whole = static_cast<long long>(std::lround(seconds));
  if (whole < 3600) return fmt::format("{}m {:02d}s", whole / 60, int(whole % 60));
  return fmt::format("{}h {:02d}m", whole / 3600, int(whole % 3600 / 60));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Deadline::Deadline(double limit_seconds) : start_(Clock::now()), limit_(limit_seconds) {}

double Deadline::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

Deadline Deadline::earlier_by(double seconds) const {
  Deadline d = *this;
  // A limit of 0 means "none": a budget used up by what must follow stays a (spent) limit.
  if (limited() && seconds > 0) d.limit_ = std::max(limit_ - seconds, 1e-9);
  return d;
}

double Deadline::remaining() const {
  return limited() ? std::max(0.0, limit_ - elapsed()) : std::numeric_limits<double>::infinity();
}

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "";
    case StopReason::kTrials:
      return "trial budget spent";
    case StopReason::kTime:
      return "time budget spent";
    case StopReason::kNoImprovement:
      return "no improvement";
    case StopReason::kExhausted:
      return "no untried candidates left";
    case StopReason::kListed:
      return "listed kernels measured";
  }
  return "";
}

bool ImprovementTracker::stalled_after(double weighted_mean_us) {
  if (!std::isfinite(weighted_mean_us)) return false;  // nothing measured yet: keep going
  if (!best_ || weighted_mean_us < *best_ * (1 - min_improvement_)) {
    stalled_ = 0;
  } else {
    ++stalled_;
  }
  if (!best_ || weighted_mean_us < *best_) best_ = weighted_mean_us;
  return patience_ > 0 && stalled_ >= patience_;
}

}  // namespace dietcode
