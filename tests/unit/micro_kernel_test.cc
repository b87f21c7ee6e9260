#include "space/micro_kernel.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace dietcode {
namespace {

TEST(MicroKernel, KeyIsCanonicalAndSortedByTunable) {
  MicroKernel mk{"dense_f32", {{"BN", 64}, {"BM", 32}, {"BK", 8}}};
  EXPECT_EQ(mk.key(), "dense_f32:BK=8,BM=32,BN=64");
}

TEST(MicroKernel, JsonRoundTrip) {
  MicroKernel mk{"dense_f32", {{"BM", 32}, {"SPLITK", 2}}};
  EXPECT_EQ(MicroKernel::from_json(mk.to_json()), mk);
}

TEST(MicroKernel, RejectsNonIntegerTunable) {
  auto j = nlohmann::json::parse(R"({"template": "dense_f32", "params": {"BM": "big"}})");
  EXPECT_THROW(MicroKernel::from_json(j), UserError);
}

TEST(MicroKernel, GetNamesMissingTunable) {
  MicroKernel mk{"dense_f32", {}};
  try {
    mk.get("BM");
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "dense_f32: no tunable named BM");
  }
  EXPECT_EQ(mk.get_or("BM", 7), 7);
}

}  // namespace
}  // namespace dietcode
