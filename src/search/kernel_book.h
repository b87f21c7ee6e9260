// What the search knows about the micro-kernels of one op: every kernel with a record, from
// the log of earlier runs or from this one, its launch plan and compiled resources (what the
// cost model reads), its latency on each instance, and whether it ever failed. The log is the
// state: a KernelBook is rebuilt from the records alone, so any prefix of the log resumes.
//
// A kernel that failed anywhere (compile error, spills, launch error, timeout, wrong result)
// is never assigned to an instance and never proposed again.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "measure/measurer.h"
#include "nvrtc/compiler.h"
#include "search/instance_table.h"
#include "search/runoff.h"
#include "space/micro_kernel.h"

namespace dietcode {

struct KernelEntry {
  MicroKernel mk;
  std::string key;  // mk.key()
  LaunchPlan plan;
  std::optional<KernelResources> resources;  // the main entry's ptxas report, when known
  bool failed = false;
  MeasureStatus status = MeasureStatus::kOk;  // the first failure's status
  std::string error;                          // and its message
  // Per instance; NaN where not measured. Where a runoff timed the instance, settled as
  // search/runoff.h says (the runoff's time for a finalist, the scaled ordinary time for
  // any other kernel); everywhere else ordinary_us.
  std::vector<double> latency_us;
  std::vector<double> ordinary_us;  // per instance: the first ordinary measurement, NaN if none
  std::vector<char> recorded;       // per instance: the log has a record of it
  size_t measured = 0;              // instances with a latency
  // Timed by this run, so its measurer has it loaded and checked already: timing it again
  // (the runoff) costs its timings alone. Kernels known from the log alone cost a load and a
  // check first.
  bool timed_here = false;
};

class KernelBook {
 public:
  explicit KernelBook(const InstanceTable& table) : table_(&table) {}

  // The entry of a kernel, created (with no records) on first use.
  KernelEntry& add(const MicroKernel& mk, const LaunchPlan& plan);
  const KernelEntry* find(const std::string& key) const;
  bool contains(const std::string& key) const { return index_.count(key) > 0; }

  // What a record or a result says about (kernel, instance).
  void add_latency(KernelEntry& entry, size_t instance, double latency_us);
  // A time from the op's runoff number `runoff` (search/runoff.h); the instance's times are
  // settled again.
  void add_runoff_latency(KernelEntry& entry, size_t instance, int runoff, double latency_us);
  // The highest runoff number any instance has (0: no runoff yet).
  int latest_runoff() const;
  void add_failure(KernelEntry& entry, size_t instance, MeasureStatus status,
                   const std::string& error);
  // What a log record says of the kernel's compiled main entry (ptxas's registers per
  // thread), kept unless the entry already has a report: enough for the cost model's features.
  static void note_registers(KernelEntry& entry, int registers);

  size_t size() const { return entries_.size(); }
  const KernelEntry& operator[](size_t i) const { return entries_[i]; }
  KernelEntry& operator[](size_t i) { return entries_[i]; }

  // Kernels that never failed and have at least one latency, in the order they were added.
  std::vector<size_t> usable() const;

  // Per instance: the lowest measured latency of a usable kernel (+infinity where none) and
  // that kernel (-1 where none). Ties go to the kernel added first, as the log reader does.
  std::vector<double> best_latency() const;
  std::vector<int> best_kernel() const;

 private:
  // Recomputes every kernel's latency_us[instance] from the ordinary and runoff times.
  void settle(size_t instance);

  const InstanceTable* table_;
  std::vector<KernelEntry> entries_;
  std::vector<InstanceRunoff> runoff_;  // per instance
  std::map<std::string, size_t> index_;
};

}  // namespace dietcode
