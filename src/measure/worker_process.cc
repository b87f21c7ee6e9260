#include "measure/worker_process.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/error.h"

namespace dietcode {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrameBytes = 1u << 30;  // a sanity bound: no request is near this
constexpr double kStopGraceSeconds = 1.0;      // for a worker to exit on end of input
constexpr double kDeathGraceSeconds = 2.0;     // for a worker that hung up to finish dying

std::string frame(const json& value) {
  std::vector<uint8_t> body = json::to_cbor(value);
  uint32_t n = uint32_t(body.size());
  std::string out = {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  out.append(body.begin(), body.end());
  return out;
}

// ---- The worker's side: blocking I/O; any failure ends the worker. ----

bool read_exact(int fd, void* data, size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

[[noreturn]] void serve_worker(int fd, const WorkerHandler& handler) {
  for (;;) {
    unsigned char header[4];
    if (!read_exact(fd, header, 4)) _exit(0);  // the parent hung up: done
    uint32_t n = uint32_t(header[0]) << 24 | uint32_t(header[1]) << 16 | uint32_t(header[2]) << 8 |
                 header[3];
    if (n > kMaxFrameBytes) _exit(70);
    std::vector<uint8_t> body(n);
    if (!read_exact(fd, body.data(), n)) _exit(0);
    json reply;
    try {
      reply = {{"value", handler(json::from_cbor(body))}};
    } catch (const EnvironmentError& e) {
      reply = {{"error", e.what()}, {"environment", true}};
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}, {"environment", false}};
    } catch (...) {
      reply = {{"error", "the handler threw a non-standard exception"}, {"environment", false}};
    }
    if (!write_all(fd, frame(reply))) _exit(0);
  }
}

namespace {

// ---- The parent's side: non-blocking I/O against a deadline. ----

enum class Io { kDone, kClosed, kTimedOut };

Io wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Io::kTimedOut;
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, int(std::min<int64_t>(left.count(), 1 << 30)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Io::kClosed;
    if (r > 0) return Io::kDone;  // readable, writable, or hung up: the next call tells which
  }
}

Io send_all(int fd, const std::string& data, Clock::time_point deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (Io w = wait_for(fd, POLLOUT, deadline); w != Io::kDone) return w;
    } else {
      return Io::kClosed;
    }
  }
  return Io::kDone;
}

Io recv_exact(int fd, void* data, size_t size, Clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (Io w = wait_for(fd, POLLIN, deadline); w != Io::kDone) return w;
    } else {
      return Io::kClosed;
    }
  }
  return Io::kDone;
}

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

}  // namespace

WorkerProcess::WorkerProcess(WorkerHandler handler) : handler_(std::move(handler)) {}

WorkerProcess::WorkerProcess(std::vector<std::string> command) : command_(std::move(command)) {
  if (command_.empty()) throw std::invalid_argument("WorkerProcess: empty command");
}

WorkerProcess::~WorkerProcess() { stop(); }

void WorkerProcess::start() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw EnvironmentError(
        fmt::format("cannot start a measurement worker: socketpair: {}", std::strerror(errno)));
  pid_t parent = ::getpid();
  // Built before fork: between fork and exec only async-signal-safe calls are allowed.
  std::vector<char*> argv;
  for (auto& arg : command_) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int error = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    throw EnvironmentError(
        fmt::format("cannot start a measurement worker: fork: {}", std::strerror(error)));
  }
  if (pid == 0) {
    ::close(sv[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(0);  // the parent died before prctl took effect
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(SIGINT, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (command_.empty()) serve_worker(sv[1], handler_);
    // dup2 clears close-on-exec on the copy: the program finds its socket on fd 3.
    if (sv[1] == kWorkerSocketFd ? ::fcntl(sv[1], F_SETFD, 0) < 0
                                 : ::dup2(sv[1], kWorkerSocketFd) < 0)
      _exit(71);
    ::execv(argv[0], argv.data());
    _exit(72);  // the parent sees "worker exited with status 72"
  }
  ::close(sv[1]);
  ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  socket_ = sv[0];
  pid_ = pid;
  ++started_;
}

void WorkerProcess::reap(double grace_seconds, WorkerReply& reply) {
  if (pid_ == 0) return;
  int status = 0;
  pid_t done = 0;
  auto deadline = Clock::now() + std::chrono::duration<double>(grace_seconds);
  while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (done == 0) {
    ::kill(pid_, SIGKILL);
    done = ::waitpid(pid_, &status, 0);
  }
  if (done == pid_ && WIFSIGNALED(status)) {
    reply.signal = WTERMSIG(status);
  } else if (done == pid_ && WIFEXITED(status)) {
    reply.exit_status = WEXITSTATUS(status);
  }
  ::close(socket_);
  socket_ = -1;
  pid_ = 0;
}

void WorkerProcess::stop() {
  if (pid_ == 0) return;
  ::shutdown(socket_, SHUT_WR);  // end of input: the worker exits on its own
  WorkerReply ignored;
  reap(kStopGraceSeconds, ignored);
}

WorkerReply WorkerProcess::call(const json& request, double timeout_seconds) {
  auto begin = Clock::now();
  auto deadline = begin + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_seconds));
  WorkerReply reply;
  auto finish = [&]() -> WorkerReply {
    reply.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return reply;
  };
  auto lost = [&](Io io) -> WorkerReply {
    if (io == Io::kTimedOut) {
      ::kill(pid_, SIGKILL);
      reap(kDeathGraceSeconds, reply);
      reply.signal = 0;
      reply.outcome = WorkerOutcome::kTimeout;
      reply.error = fmt::format("no answer within {:g} s; worker killed", timeout_seconds);
      return finish();
    }
    reap(kDeathGraceSeconds, reply);
    reply.outcome = WorkerOutcome::kCrashed;
    if (reply.signal)
      reply.error = fmt::format("worker killed by {} ({})", signal_name(reply.signal),
                                strsignal(reply.signal));
    else if (reply.exit_status >= 0)
      reply.error = fmt::format("worker exited with status {}", reply.exit_status);
    else
      reply.error = "worker hung up without answering";
    return finish();
  };

  if (pid_ == 0) start();
  if (Io io = send_all(socket_, frame(request), deadline); io != Io::kDone) return lost(io);
  unsigned char header[4];
  if (Io io = recv_exact(socket_, header, 4, deadline); io != Io::kDone) return lost(io);
  uint32_t n =
      uint32_t(header[0]) << 24 | uint32_t(header[1]) << 16 | uint32_t(header[2]) << 8 | header[3];
  std::vector<uint8_t> body(std::min(n, kMaxFrameBytes));
  if (Io io = recv_exact(socket_, body.data(), body.size(), deadline); io != Io::kDone)
    return lost(io);

  json envelope = json::from_cbor(body, true, /*allow_exceptions=*/false);
  if (n > kMaxFrameBytes || envelope.is_discarded() || !envelope.is_object()) {
    ::kill(pid_, SIGKILL);
    reap(kDeathGraceSeconds, reply);
    reply.signal = 0;
    reply.outcome = WorkerOutcome::kCrashed;
    reply.error = "worker sent an unreadable answer; worker killed";
    return finish();
  }
  if (auto value = envelope.find("value"); value != envelope.end()) {
    reply.value = std::move(*value);
    return finish();
  }
  reply.outcome = WorkerOutcome::kHandlerError;
  reply.error = envelope.value("error", std::string("the handler failed"));
  reply.environment_error = envelope.value("environment", false);
  return finish();
}

}  // namespace dietcode
