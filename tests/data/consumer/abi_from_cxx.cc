// The same header from C++ (inside its extern "C" guards), with declarations of exactly
// the signatures of SPEC §5, since programs and ctypes load them by name.
#include <dietcode/pack_abi.h>

#include <type_traits>

static_assert(std::is_same<decltype(&dietcode_abi_version), int (*)()>::value, "abi_version");
static_assert(std::is_same<decltype(&dietcode_manifest), const char* (*)()>::value, "manifest");
static_assert(std::is_same<decltype(&dietcode_last_error), const char* (*)()>::value,
              "last_error");
static_assert(std::is_same<decltype(&dietcode_select),
                           int (*)(const char*, const int64_t*, int)>::value,
              "select");
static_assert(std::is_same<decltype(&dietcode_select_arch),
                           int (*)(const char*, int, const int64_t*, int)>::value,
              "select_arch");
static_assert(std::is_same<decltype(&dietcode_launch), int (*)(const char*, void* const*, int,
                                                               const int64_t*, int, void*)>::value,
              "launch");

extern "C" int abi_from_cxx(void) { return DIETCODE_ABI_VERSION; }
