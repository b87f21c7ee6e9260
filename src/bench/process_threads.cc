#include "bench/process_threads.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace dietcode {

char stat_thread_state(const std::string& stat_line) {
  const size_t paren = stat_line.rfind(')');
  if (paren == std::string::npos) return 0;
  const size_t at = stat_line.find_first_not_of(' ', paren + 1);
  return at == std::string::npos ? 0 : stat_line[at];
}

int other_running_threads() {
  const long self = syscall(SYS_gettid);
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 0;  // no /proc: nothing to wait for
  int running = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    if (std::strtol(entry->d_name, nullptr, 10) == self) continue;
    std::ifstream in(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string line;
    if (std::getline(in, line) && stat_thread_state(line) == 'R') ++running;
  }
  closedir(dir);
  return running;
}

bool wait_for_other_threads_to_sleep(double max_us) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (other_running_threads() == 0) return true;
    const double waited =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (waited >= max_us) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

int loadavg_running_threads(const std::string& loadavg_line) {
  std::istringstream words(loadavg_line);
  std::string one, five, fifteen, running;
  if (!(words >> one >> five >> fifteen >> running)) return -1;
  const size_t slash = running.find('/');
  if (slash == std::string::npos || slash == 0) return -1;
  char* end = nullptr;
  const long value = std::strtol(running.c_str(), &end, 10);
  return end == running.c_str() + slash ? int(value) : -1;
}

int machine_running_threads() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  return std::getline(in, line) ? loadavg_running_threads(line) : -1;
}

}  // namespace dietcode
