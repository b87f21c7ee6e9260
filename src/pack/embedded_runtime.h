// The text of the files every kernel pack compiles besides its generated code: the loader
// runtime (src/pack/runtime/) and the plain-C headers it includes (dietcode/pack_abi.h,
// dietcode_args.h). They are embedded into dietcode when dietcode is built (the rule is in
// src/CMakeLists.txt, the generator in embed_files.cmake), so building a pack needs no data
// files at run time and always uses the runtime dietcode was built with.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

struct EmbeddedFile {
  const char* path;  // where it goes in a pack's build folder: "pack_runtime.cc",
                     // "include/dietcode/pack_abi.h", "include/dietcode_args.h", ...
  std::string text;
};

const std::vector<EmbeddedFile>& embedded_runtime_files();

// The text of one of them; throws std::out_of_range for a path that is not embedded.
const std::string& embedded_runtime_file(const std::string& path);

}  // namespace dietcode
