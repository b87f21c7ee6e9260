#include "measure/worker_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"

namespace dietcode {
namespace {

using nlohmann::json;

// A handler that misbehaves on request. `served` lives in the worker's memory: it counts the
// requests this worker has answered, and starts from 0 in a fresh one.
json misbehave(const json& request) {
  static int served = 0;
  ++served;
  std::string action = request.at("action");
  if (action == "segv") raise(SIGSEGV);
  if (action == "abort") abort();
  if (action == "exit3") exit(3);
  if (action == "hang")
    for (;;) pause();
  if (action == "throw") throw std::runtime_error("bad request");
  if (action == "no_driver") throw EnvironmentError("libcuda.so.1: cannot open shared object");
  return {{"payload", request.value("payload", json())}, {"pid", getpid()}, {"served", served}};
}

json echo(json payload = 1) { return {{"action", "echo"}, {"payload", std::move(payload)}}; }

TEST(WorkerProcess, OneWorkerServesRequestsInTurnAndKeepsItsState) {
  WorkerProcess worker(misbehave);
  EXPECT_EQ(worker.pid(), 0);  // started on first use
  std::vector<uint8_t> cubin(1 << 20);
  for (size_t i = 0; i < cubin.size(); ++i) cubin[i] = uint8_t(i * 131);
  for (int i = 1; i <= 3; ++i) {
    json payload = {{"i", i}, {"cubin", json::binary(cubin)}};
    WorkerReply reply = worker.call(echo(payload), 10);
    ASSERT_EQ(reply.outcome, WorkerOutcome::kOk) << reply.error;
    EXPECT_EQ(reply.value["served"], i);
    EXPECT_EQ(reply.value["pid"], worker.pid());
    EXPECT_EQ(reply.value["payload"], payload);  // a megabyte of binary, byte for byte
  }
  EXPECT_EQ(worker.workers_started(), 1);
  EXPECT_NE(worker.pid(), getpid());
}

struct Misbehaviour {
  const char* action;
  WorkerOutcome outcome;
  const char* error;
  int signal;
  int exit_status;
};

class WorkerFailure : public ::testing::TestWithParam<Misbehaviour> {};

TEST_P(WorkerFailure, IsRecordedAndTheNextRequestGetsAFreshWorker) {
  const Misbehaviour& m = GetParam();
  WorkerProcess worker(misbehave);
  ASSERT_EQ(worker.call(echo(), 10).outcome, WorkerOutcome::kOk);
  pid_t first = worker.pid();

  auto start = std::chrono::steady_clock::now();
  WorkerReply reply = worker.call({{"action", m.action}}, 0.3);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(reply.outcome, m.outcome);
  EXPECT_EQ(reply.error, m.error);
  EXPECT_EQ(reply.signal, m.signal);
  EXPECT_EQ(reply.exit_status, m.exit_status);
  EXPECT_LT(elapsed, 3.0);
  EXPECT_EQ(worker.pid(), 0);  // the broken worker is gone ...
  errno = 0;
  EXPECT_EQ(waitpid(first, nullptr, WNOHANG), -1);  // ... and reaped, not a zombie
  EXPECT_EQ(errno, ECHILD);

  WorkerReply next = worker.call(echo(), 10);
  ASSERT_EQ(next.outcome, WorkerOutcome::kOk) << next.error;
  EXPECT_EQ(next.value["served"], 1);  // a fresh worker
  EXPECT_NE(next.value["pid"], first);
  EXPECT_EQ(worker.workers_started(), 2);
}

INSTANTIATE_TEST_SUITE_P(
    Crashes, WorkerFailure,
    ::testing::Values(Misbehaviour{"segv", WorkerOutcome::kCrashed,
                                   "worker killed by SIGSEGV (Segmentation fault)", SIGSEGV, -1},
                      Misbehaviour{"abort", WorkerOutcome::kCrashed,
                                   "worker killed by SIGABRT (Aborted)", SIGABRT, -1},
                      Misbehaviour{"exit3", WorkerOutcome::kCrashed, "worker exited with status 3",
                                   0, 3},
                      Misbehaviour{"hang", WorkerOutcome::kTimeout,
                                   "no answer within 0.3 s; worker killed", 0, -1}),
    [](const auto& info) { return std::string(info.param.action); });

TEST(WorkerProcess, AHandlerThatThrowsLeavesTheWorkerRunning) {
  WorkerProcess worker(misbehave);
  WorkerReply thrown = worker.call({{"action", "throw"}}, 10);
  EXPECT_EQ(thrown.outcome, WorkerOutcome::kHandlerError);
  EXPECT_EQ(thrown.error, "bad request");
  EXPECT_FALSE(thrown.environment_error);
  pid_t pid = worker.pid();

  WorkerReply environment = worker.call({{"action", "no_driver"}}, 10);
  EXPECT_EQ(environment.outcome, WorkerOutcome::kHandlerError);
  EXPECT_EQ(environment.error, "libcuda.so.1: cannot open shared object");
  EXPECT_TRUE(environment.environment_error);

  WorkerReply next = worker.call(echo(), 10);
  ASSERT_EQ(next.outcome, WorkerOutcome::kOk);
  EXPECT_EQ(next.value["served"], 3);
  EXPECT_EQ(worker.pid(), pid);
  EXPECT_EQ(worker.workers_started(), 1);
}

TEST(WorkerProcess, StoppingEndsAndReapsTheWorker) {
  pid_t pid;
  {
    WorkerProcess worker(misbehave);
    ASSERT_EQ(worker.call(echo(), 10).outcome, WorkerOutcome::kOk);
    pid = worker.pid();
    worker.stop();
    EXPECT_EQ(worker.pid(), 0);
    errno = 0;
    EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    // A stopped worker is replaced on the next call.
    EXPECT_EQ(worker.call(echo(), 10).value["served"], 1);
  }  // the destructor stops the second one
  EXPECT_EQ(kill(pid, 0), -1);
}

// The program an exec'ed worker runs: this test binary, told by its environment to serve.
TEST(WorkerExecChild, Serve) {
  if (!getenv("DIETCODE_TEST_SERVE_WORKER")) GTEST_SKIP() << "runs only as an exec'ed worker";
  serve_worker(kWorkerSocketFd, misbehave);
}

TEST(WorkerProcess, AnExecedWorkerServesAndIsReplacedAfterACrash) {
  setenv("DIETCODE_TEST_SERVE_WORKER", "1", 1);  // the exec'ed worker inherits it
  WorkerProcess worker(std::vector<std::string>{
      "/proc/self/exe", "--gtest_filter=WorkerExecChild.Serve", "--gtest_brief=1"});
  WorkerReply first = worker.call(echo(), 20);
  ASSERT_EQ(first.outcome, WorkerOutcome::kOk) << first.error;
  EXPECT_EQ(first.value["served"], 1);
  EXPECT_EQ(first.value["pid"], worker.pid());
  EXPECT_EQ(worker.call(echo(), 20).value["served"], 2);

  WorkerReply crash = worker.call({{"action", "segv"}}, 20);
  EXPECT_EQ(crash.outcome, WorkerOutcome::kCrashed);
  EXPECT_EQ(crash.error, "worker killed by SIGSEGV (Segmentation fault)");
  WorkerReply next = worker.call(echo(), 20);
  ASSERT_EQ(next.outcome, WorkerOutcome::kOk) << next.error;
  EXPECT_EQ(next.value["served"], 1);
  EXPECT_EQ(worker.workers_started(), 2);
  worker.stop();
  unsetenv("DIETCODE_TEST_SERVE_WORKER");

  WorkerProcess missing(std::vector<std::string>{"/nonexistent/worker"});
  WorkerReply reply = missing.call(echo(), 20);
  EXPECT_EQ(reply.outcome, WorkerOutcome::kCrashed);
  EXPECT_EQ(reply.error, "worker exited with status 72");
}

// True once the process is gone or a zombie (an orphan may wait for a busy init to reap it).
bool is_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return text.empty() || paren == std::string::npos || text.substr(paren + 2, 1) == "Z";
}

// A worker busy with a request when its parent is killed must not live on: it would hold the
// GPU. Its socket's end of input cannot reach it while it is busy; the death signal does.
TEST(WorkerProcess, ABusyWorkerDiesWithItsParent) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    WorkerProcess worker(misbehave);
    WorkerReply reply = worker.call(echo(), 10);
    pid_t pid = reply.outcome == WorkerOutcome::kOk ? worker.pid() : 0;
    (void)!write(fds[1], &pid, sizeof pid);
    worker.call({{"action", "hang"}}, 60);
    _exit(0);
  }
  close(fds[1]);
  pid_t worker_pid = 0;
  ASSERT_EQ(read(fds[0], &worker_pid, sizeof worker_pid), ssize_t(sizeof worker_pid));
  close(fds[0]);
  ASSERT_GT(worker_pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the worker is in the hang
  EXPECT_FALSE(is_dead(worker_pid));
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!is_dead(worker_pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(is_dead(worker_pid));
  if (!is_dead(worker_pid)) kill(worker_pid, SIGKILL);
}

}  // namespace
}  // namespace dietcode
