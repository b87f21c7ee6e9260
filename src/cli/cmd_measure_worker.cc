// dietcode __measure-worker and __measure-cpu-worker: the GPU and the CPU measurement workers,
// not for users (hidden from --help). The CPU one is the same arrangement around
// cpu_worker_handler() (x86/cpu_measurer.h): an exec, not a fork, because tune compiles on
// several threads and a forked child could inherit a loader or allocator lock held by one.
// GpuMeasurer starts it exec'ed (gpu_worker_command() in measure/gpu_measurer.h) with its end
// of a socket on file descriptor 3, and it serves gpu_worker_handler() there until the tuner
// hangs up. Being a fresh exec of the same binary, it is untouched by the tuner's threads and
// by any CUDA state the tuner's process might hold.
#include <sys/stat.h>

#include "cli/app.h"
#include "common/error.h"
#include "measure/gpu_measurer.h"
#include "measure/worker_process.h"
#include "x86/cpu_measurer.h"

namespace dietcode::cli {

namespace {

int run_measure_worker(const char* name, const WorkerHandler& handler) {
  // Run by hand there is no socket: say what this is instead of waiting on the terminal.
  struct stat st;
  if (::fstat(kWorkerSocketFd, &st) != 0 || !S_ISSOCK(st.st_mode))
    throw UserError(std::string(name) +
                    ": an internal command of dietcode tune; it serves a socket on file "
                    "descriptor 3");
  serve_worker(kWorkerSocketFd, handler);
}

}  // namespace

void register_measure_worker(CLI::App& app, GlobalOptions& global, Action& action) {
  auto* cmd = app.add_subcommand(kMeasureWorkerSubcommand, "GPU measurement worker (internal)");
  cmd->group("");  // hidden: no entry in --help
  cmd->callback([&action] {
    action = [] { return run_measure_worker(kMeasureWorkerSubcommand, gpu_worker_handler()); };
  });
  auto* cpu = app.add_subcommand(kCpuMeasureWorkerSubcommand, "CPU measurement worker (internal)");
  cpu->group("");
  cpu->callback([&action] {
    action = [] { return run_measure_worker(kCpuMeasureWorkerSubcommand, cpu_worker_handler()); };
  });
}

}  // namespace dietcode::cli
