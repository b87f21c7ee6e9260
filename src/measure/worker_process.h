// WorkerProcess: runs a request handler in a child process, so that whatever the handler does
// to itself — a kernel that faults and poisons its CUDA context, a trap, an abort in the
// driver, a kernel that never finishes — costs one request, not the tuning run.
//
//   parent                                   worker (forked child)
//   call(request, timeout) ── frame ──►      handler(request)  (state persists across calls:
//                          ◄── frame ──      reply               contexts, modules, buffers)
//
// Frames are length-prefixed: a 4-byte big-endian byte count, then the JSON value encoded as
// CBOR (the JSON data model, plus binary strings, so a CUBIN travels without base64). The
// parent waits with a deadline (poll); a worker that dies gives kCrashed with how it died
// ("worker killed by SIGSEGV (Segmentation fault)", "worker exited with status 3"), one that
// does not answer in time is killed and gives kTimeout. Either way the next call starts a
// fresh worker. A handler that throws gives kHandlerError and the worker lives on.
//
// Two ways to start a worker:
//   forked   WorkerProcess(handler): any std::function serves; the worker inherits the
//            parent's memory as it was at fork time, and only the forking thread. CUDA does not
//            survive fork: a forked worker can use the GPU only if the parent never initialised
//            the driver (let the worker query the device instead).
//   exec'ed  WorkerProcess(command): runs a program (typically /proc/self/exe with a hidden
//            subcommand) whose socket is file descriptor 3, and which calls
//            serve_worker(3, handler). A clean process: immune to whatever the parent has
//            initialised, and to locks other threads held at fork time.
// Either way the worker dies with its parent (PR_SET_PDEATHSIG), leaves no core dump, and
// ignores SIGINT, so Ctrl-C reaches the parent, which decides.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dietcode {

using WorkerHandler = std::function<nlohmann::json(const nlohmann::json& request)>;

enum class WorkerOutcome {
  kOk,            // the handler answered; WorkerReply::value holds its answer
  kHandlerError,  // the handler threw; the worker is still running
  kCrashed,       // the worker died (signal or exit) before answering
  kTimeout,       // no answer within the deadline; the worker was killed
};

struct WorkerReply {
  WorkerOutcome outcome = WorkerOutcome::kOk;
  nlohmann::json value;            // kOk only
  std::string error;               // one line, for every other outcome
  bool environment_error = false;  // kHandlerError from an EnvironmentError (no driver, no GPU)
  int signal = 0;                  // kCrashed by a signal: its number
  int exit_status = -1;            // kCrashed by exiting: its status
  double seconds = 0;              // wall time of the call, worker start included
};

// The worker's side of the protocol: answers requests on `fd` until end of input, then exits
// the process. For the program an exec'ed worker runs.
[[noreturn]] void serve_worker(int fd, const WorkerHandler& handler);

// The file descriptor an exec'ed worker finds its socket on.
constexpr int kWorkerSocketFd = 3;

class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerHandler handler);
  explicit WorkerProcess(std::vector<std::string> command);
  ~WorkerProcess();  // stops the worker
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends one request and waits up to timeout_seconds for the answer, starting a worker if
  // none is running. Throws EnvironmentError only when no worker can be started at all
  // (fork or socketpair failing: out of processes or descriptors).
  WorkerReply call(const nlohmann::json& request, double timeout_seconds);

  // Ends the worker: closes its socket (it exits on end of input), kills it if it lingers.
  void stop();

  pid_t pid() const { return pid_; }  // the running worker, 0 when none
  int workers_started() const { return started_; }

 private:
  void start();
  // Waits for the worker to end (killing it after `grace_seconds`) and says how it ended.
  void reap(double grace_seconds, WorkerReply& reply);

  WorkerHandler handler_;             // forked mode
  std::vector<std::string> command_;  // exec'ed mode
  pid_t pid_ = 0;
  int socket_ = -1;  // the parent's end
  int started_ = 0;
};

}  // namespace dietcode
