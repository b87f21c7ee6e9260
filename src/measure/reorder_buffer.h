// ReorderBuffer: results that arrive in any order leave in the order of their numbers.
//
// Several GPUs measure the jobs of a round at once and finish them in whatever order their
// speed and luck decide; the tuning log must not care. Jobs are numbered 0, 1, 2, ... and a
// result is released only once every lower-numbered one has been released, so the log's lines
// come in job order whatever the timing, and a run killed mid-round has written a prefix of
// the jobs: at most the results waiting behind an unfinished earlier job are lost, and no line
// already written ever needs to change.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace dietcode {

template <typename T>
class ReorderBuffer {
 public:
  // Holds job `index`'s result until its turn. Throws std::logic_error for an index already
  // released or already waiting: each job must be delivered exactly once.
  void put(size_t index, T value) {
    if (index < next_ || waiting_.count(index))
      throw std::logic_error("ReorderBuffer: job " + std::to_string(index) + " delivered twice");
    waiting_.emplace(index, std::move(value));
  }

  // The next result in order, if it has arrived; releasing it moves the turn on.
  std::optional<std::pair<size_t, T>> pop() {
    auto it = waiting_.find(next_);
    if (it == waiting_.end()) return std::nullopt;
    std::pair<size_t, T> out{it->first, std::move(it->second)};
    waiting_.erase(it);
    ++next_;
    return out;
  }

  bool ready() const { return waiting_.count(next_) > 0; }  // pop() would release one
  size_t next() const { return next_; }                     // the job released next
  size_t waiting() const { return waiting_.size(); }        // arrived, not yet released

 private:
  size_t next_ = 0;
  std::map<size_t, T> waiting_;
};

}  // namespace dietcode
