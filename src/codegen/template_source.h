// Reads a template from <data_dir>/templates and makes it self-contained: every
// `#include "local.h"` is replaced by that header's text, so a kernel's source is the whole
// input to NVRTC and a cache key over (source, options) is complete.
#pragma once

#include <filesystem>
#include <string>

namespace dietcode {

// file: a name inside the templates folder, "dense_f32.cu". Throws EnvironmentError when the
// file or one of its local headers cannot be read.
std::string load_template_source(const std::string& file);

// The same, from an explicit folder (tests).
std::string load_template_source(const std::filesystem::path& dir, const std::string& file);

}  // namespace dietcode
