// Several devices measuring one round (MeasurePool) and the reorder buffer under it: results
// are committed in job order whatever order they arrive in, as soon as every earlier job is
// done; a faster device takes more jobs; a device that dies hands its job to another, and the
// job is neither lost nor measured twice; a job that takes down two devices is recorded as
// failed; when every device is gone the run stops with the error, having committed a prefix.
#include "measure/measure_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "measure/reorder_buffer.h"

namespace dietcode {
namespace {

using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;

TEST(ReorderBuffer, ReleasesInIndexOrderWhateverTheArrivalOrder) {
  ReorderBuffer<std::string> buffer;
  buffer.put(2, "c");
  buffer.put(1, "b");
  EXPECT_FALSE(buffer.ready());
  EXPECT_FALSE(buffer.pop());
  EXPECT_EQ(buffer.waiting(), 2u);
  buffer.put(0, "a");
  std::string order;
  while (auto next = buffer.pop()) order += std::to_string(next->first) + next->second;
  EXPECT_EQ(order, "0a1b2c");
  EXPECT_EQ(buffer.next(), 3u);
  EXPECT_EQ(buffer.waiting(), 0u);
}

TEST(ReorderBuffer, AJobDeliveredTwiceIsABug) {
  ReorderBuffer<int> buffer;
  buffer.put(1, 10);
  EXPECT_THROW(buffer.put(1, 11), std::logic_error);
  buffer.put(0, 0);
  while (buffer.pop()) {
  }
  EXPECT_THROW(buffer.put(0, 1), std::logic_error);
}

// Inputs are named "J.K" (job J, kernel K) through kernel.name; a device answers each with the
// latency 1000 * J + K, after whatever its script says (sleep, or throw as a dead GPU would).
class ScriptedDevice : public Measurer {
 public:
  explicit ScriptedDevice(int ordinal) : ordinal_(ordinal) {}
  DeviceIdentity device() const override { return {"scripted GPU", "sm_90", true}; }
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    const int job = std::stoi(inputs.at(0).kernel.name);
    ++calls;
    if (script) script(job);
    std::vector<MeasureResult> results;
    for (const MeasureInput& input : inputs) {
      const size_t dot = input.kernel.name.find('.');
      MeasureResult r;
      r.latency_us = {1000.0 * job + std::stoi(input.kernel.name.substr(dot + 1))};
      results.push_back(r);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    done.push_back(job);
    return results;
  }
  std::function<void(int job)> script;  // runs on the device's thread
  std::atomic<int> calls{0};
  std::vector<int> done;  // jobs it returned results for

  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  std::mutex mutex_;
};

std::vector<std::vector<MeasureInput>> make_jobs(int jobs, int per_job) {
  std::vector<std::vector<MeasureInput>> out(static_cast<size_t>(jobs));
  for (int j = 0; j < jobs; ++j)
    for (int k = 0; k < per_job; ++k) {
      MeasureInput input;
      input.kernel.name = std::to_string(j) + "." + std::to_string(k);
      input.instances.resize(1);
      out[size_t(j)].push_back(input);
    }
  return out;
}

struct Committed {
  std::vector<size_t> order;
  std::vector<std::vector<MeasureResult>> results;
};

MeasurePool::Commit recorder(Committed& c) {
  return [&c](size_t job, std::vector<MeasureResult>& results) {
    c.order.push_back(job);
    c.results.push_back(results);
  };
}

std::vector<size_t> first(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(MeasurePool, CommitsInJobOrderAndTheFasterDeviceTakesMore) {
  ScriptedDevice slow(0), fast(1);
  slow.script = [](int) { sleep_ms(40); };
  fast.script = [](int) { sleep_ms(2); };
  MeasurePool pool({{0, &slow}, {1, &fast}});
  const auto jobs = make_jobs(12, 3);
  Committed c;
  pool.run(jobs, recorder(c));
  ASSERT_EQ(c.order, first(12));
  for (size_t j = 0; j < 12; ++j)
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(c.results[j][k].latency_us[0], 1000.0 * j + k);
  // The slow device holds job 0 while the fast one does the rest: every result waits for it,
  // and the log's order is still job order.
  EXPECT_GT(fast.done.size(), slow.done.size());
  EXPECT_EQ(slow.done.size() + fast.done.size(), 12u);
  const auto stats = pool.stats();
  EXPECT_EQ(stats[0].jobs + stats[1].jobs, 12);
  EXPECT_EQ(stats[1].inputs, fast.done.size() * 3);
  EXPECT_FALSE(stats[0].failed || stats[1].failed);

  // The pool serves round after round with the same threads.
  Committed again;
  pool.run(make_jobs(3, 1), recorder(again));
  EXPECT_EQ(again.order, first(3));
}

TEST(MeasurePool, AJobIsCommittedAsSoonAsEveryEarlierOneIsDone) {
  // Job 3 takes long; jobs 0-2 must reach the log before it finishes, so a run killed while
  // it is measured loses nothing of them.
  ScriptedDevice a(0), b(1);
  std::atomic<int64_t> job3_done{0};
  auto script = [&](int job) {
    if (job == 3) {
      sleep_ms(300);
      job3_done = Clock::now().time_since_epoch().count();
    }
  };
  a.script = script;
  b.script = script;
  MeasurePool pool({{0, &a}, {1, &b}});
  std::vector<int64_t> committed_at;
  pool.run(make_jobs(6, 1), [&](size_t, std::vector<MeasureResult>&) {
    committed_at.push_back(Clock::now().time_since_epoch().count());
  });
  ASSERT_EQ(committed_at.size(), 6u);
  EXPECT_LT(committed_at[2], job3_done.load());
  EXPECT_GE(committed_at[3], job3_done.load());
}

TEST(MeasurePool, ADeviceThatDiesHandsItsJobToAnotherNeitherLostNorMeasuredTwice) {
  ScriptedDevice healthy(0), dying(3);
  // The healthy device holds its first job until the other has died, so the dying one is sure
  // to get three.
  healthy.script = [&](int) {
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (dying.calls < 3 && Clock::now() < give_up) sleep_ms(1);
  };
  dying.script = [&](int) {
    if (dying.calls >= 3) {
      sleep_ms(5);
      throw EnvironmentError("GPU 3 fell off the bus");
    }
  };
  MeasurePool pool({{0, &healthy}, {3, &dying}});
  Committed c;
  pool.run(make_jobs(10, 2), recorder(c));
  ASSERT_EQ(c.order, first(10));
  for (size_t j = 0; j < 10; ++j) {
    EXPECT_EQ(c.results[j][0].status, MeasureStatus::kOk);
    EXPECT_EQ(c.results[j][1].latency_us[0], 1000.0 * j + 1);
  }
  // Every job was answered exactly once, by one of the two devices.
  std::multiset<int> answered(healthy.done.begin(), healthy.done.end());
  answered.insert(dying.done.begin(), dying.done.end());
  EXPECT_EQ(answered, std::multiset<int>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(dying.done.size(), 2u);
  const auto stats = pool.stats();
  EXPECT_TRUE(stats[1].failed);
  EXPECT_EQ(stats[1].error, "GPU 3 fell off the bus");
  EXPECT_EQ(stats[1].ordinal, 3);
  EXPECT_FALSE(stats[0].failed);

  // A retired device gets no more work in later rounds.
  const int calls = dying.calls;
  Committed next;
  pool.run(make_jobs(4, 1), recorder(next));
  EXPECT_EQ(next.order, first(4));
  EXPECT_EQ(dying.calls, calls);
}

TEST(MeasurePool, AJobThatTakesDownTwoDevicesIsRecordedAsFailedNotRetriedForever) {
  ScriptedDevice a(0), b(1), c(2);
  auto script = [](int job) {
    sleep_ms(2);
    if (job == 2) throw EnvironmentError("the context cannot be created");
  };
  a.script = b.script = c.script = script;
  MeasurePool pool({{0, &a}, {1, &b}, {2, &c}});
  Committed out;
  pool.run(make_jobs(6, 2), recorder(out));
  ASSERT_EQ(out.order, first(6));
  for (size_t k = 0; k < 2; ++k) {
    const MeasureResult& r = out.results[2][k];
    EXPECT_EQ(r.status, MeasureStatus::kLaunchError);
    EXPECT_THAT(r.error, testing::MatchesRegex("GPU [0-2] and GPU [0-2] failed while measuring "
                                               "it, not tried again: the context cannot be "
                                               "created"));
    ASSERT_EQ(r.latency_us.size(), 1u);
    EXPECT_TRUE(std::isnan(r.latency_us[0]));
  }
  for (size_t j : {0, 1, 3, 4, 5}) EXPECT_EQ(out.results[j][0].status, MeasureStatus::kOk);
  int failed = 0;
  for (const PoolDeviceStats& s : pool.stats()) failed += s.failed;
  EXPECT_EQ(failed, 2);
}

TEST(MeasurePool, WhenEveryDeviceIsGoneTheRunStopsHavingCommittedAPrefix) {
  ScriptedDevice a(0), b(1);
  a.script = [&](int) {
    if (a.calls > 2) throw EnvironmentError("GPU 0 is lost");
  };
  b.script = [&](int) {
    sleep_ms(20);
    if (b.calls > 1) throw EnvironmentError("GPU 1 is lost");
  };
  MeasurePool pool({{0, &a}, {1, &b}});
  Committed c;
  try {
    pool.run(make_jobs(8, 1), recorder(c));
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_THAT(
        std::string(e.what()),
        testing::MatchesRegex("every one of the 2 GPUs failed; the last: GPU [01] is lost"));
  }
  EXPECT_EQ(c.order, first(c.order.size()));
  EXPECT_LE(c.order.size(), 3u);
  // Nothing more can run.
  EXPECT_THROW(pool.run(make_jobs(1, 1), recorder(c)), EnvironmentError);
}

TEST(MeasurePool, OneDeviceThatFailsStopsTheRunWithItsOwnError) {
  ScriptedDevice only(0);
  only.script = [&](int job) {
    if (job == 1) throw EnvironmentError("no CUDA device 0: the driver sees no GPU");
  };
  MeasurePool pool({{0, &only}});
  Committed c;
  try {
    pool.run(make_jobs(3, 1), recorder(c));
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "no CUDA device 0: the driver sees no GPU");
  }
  EXPECT_EQ(c.order, first(1));
}

TEST(MeasurePool, OtherErrorsOfAMeasurerOrOfCommitReachTheCaller) {
  ScriptedDevice a(0), b(1);
  a.script = b.script = [](int job) {
    if (job == 4) throw std::runtime_error("a bug in a measurer");
  };
  MeasurePool pool({{0, &a}, {1, &b}});
  Committed c;
  EXPECT_THROW(pool.run(make_jobs(6, 1), recorder(c)), std::runtime_error);
  EXPECT_EQ(c.order, first(c.order.size()));
  EXPECT_LE(c.order.size(), 4u);

  a.script = b.script = nullptr;
  EXPECT_THROW(pool.run(make_jobs(6, 1),
                        [](size_t job, std::vector<MeasureResult>&) {
                          if (job == 2) throw std::runtime_error("disk full");
                        }),
               std::runtime_error);
  // The pool is still usable: both devices are healthy.
  Committed after;
  pool.run(make_jobs(2, 1), recorder(after));
  EXPECT_EQ(after.order, first(2));
}

}  // namespace
}  // namespace dietcode
