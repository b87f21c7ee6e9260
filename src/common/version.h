#pragma once

namespace dietcode {

// The tool version, as written into tuning logs and pack manifests.
const char* tool_version();

}  // namespace dietcode
