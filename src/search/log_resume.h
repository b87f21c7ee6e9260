// The tuning log as the state of `tune`: by default a run appends to an existing log and
// resumes from it; --fresh moves the old log aside (never silently clobbering a user's
// measurements) and starts a new one.
//
// Only records of the same workload measured on the same device (name, arch, and simulated or
// not) under the same L2 regime (flushed or warm) are used: numbers from another GPU, or from the simulated device, say nothing about
// this one. The others stay in the file untouched, and a note says they were ignored.
#pragma once

#include <string>
#include <vector>

#include "measure/measurer.h"
#include "search/tuning_log.h"

namespace dietcode {

struct ResumeState {
  std::vector<TuningRecord> records;  // this workload on this device, in file order
  size_t lines_read = 0;              // measurement records in the file, all devices
  std::vector<std::string> notes;     // skipped lines, ignored records: one line each
};

// Reads `path` if it exists (a missing log is an empty one).
ResumeState read_log_for_resume(const std::string& path, const std::string& workload,
                                const DeviceIdentity& device);

// Renames an existing log to "PATH.<UTC timestamp>.bak" (a numbered suffix if that exists too)
// and returns the new name; "" when there was no log. Throws EnvironmentError when the rename
// fails: starting fresh over a log that cannot be moved would lose it.
std::string move_log_aside(const std::string& path);

}  // namespace dietcode
