// Whole-file reads that see through gzip: tuning logs grow by tens of megabytes per tuned
// workload (one record per kernel and shape instance) and compress about 25x, so they are
// often kept and shipped as LOG.jsonl.gz.
#pragma once

#include <string>

namespace dietcode {

// Whether the file starts with gzip's magic bytes (1f 8b); false if it cannot be read.
bool is_gzip_file(const std::string& path);

// The file's bytes, decompressed when it is gzip (several concatenated members too). Throws
// UserError "PATH: cannot read: WHY" for a missing, unreadable or corrupt file.
std::string read_file_maybe_gzip(const std::string& path);

}  // namespace dietcode
