// Whether the other threads of this process are quiet, so that a timed CPU run has the cores to
// itself. bench runs a kernel pack (its own thread pool) and oneDNN and OpenBLAS (libgomp's
// team) in one process, interleaved; each pool spins for a while after its work before it
// sleeps (libgomp by default for up to a few hundred thousand pause loops, milliseconds), and a
// pool still spinning while another library is timed takes cores from it. So before every
// timed run bench waits until every other thread of the process sleeps: each run then starts
// from the same state, its own threads woken from sleep, no one else's running.
//
// Read from /proc/self/task/*/stat: a thread that spins is in state R, one in a futex wait S.
#pragma once

#include <string>

namespace dietcode {

// The state letter of a /proc/<pid>/task/<tid>/stat line ('R' running, 'S' sleeping, ...),
// read after the last ')' since the command name in parentheses may hold spaces and ')';
// 0 when the line has no state.
char stat_thread_state(const std::string& stat_line);

// How many threads of this process, other than the calling one, are running now.
int other_running_threads();

// Polls other_running_threads() until it is 0 or `max_us` microseconds have passed, sleeping
// 50 us between polls (so the waiting thread takes no core from the ones it waits for).
// Returns whether they went quiet.
bool wait_for_other_threads_to_sleep(double max_us);

// Threads running on the whole machine right now, this one included (the first figure of
// /proc/loadavg's fourth field, "2/107"); -1 when unknown. Other programs show up here: bench
// cannot keep them off the cores, only say that they were there.
int machine_running_threads();

// That figure from a /proc/loadavg line ("0.52 0.58 0.59 2/107 4242"); -1 when unparsable.
int loadavg_running_threads(const std::string& loadavg_line);

}  // namespace dietcode
