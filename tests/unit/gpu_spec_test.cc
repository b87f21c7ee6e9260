#include "space/gpu_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/paths.h"

namespace dietcode {
namespace {

using nlohmann::json;
using ::testing::IsSupersetOf;

// The message of the UserError `fn` throws, or "" (so a missing throw fails the comparison).
template <typename Fn>
std::string user_error(Fn fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

json valid_config() { return gpu_spec_to_json(load_gpu_spec("h100")); }

std::string parse_error(const json& j) {
  return user_error([&] { parse_gpu_spec(j, "bad.json", "bad"); });
}

TEST(GpuSpec, EveryShippedConfigLoads) {
  const std::vector<std::string> ids = list_gpu_specs();
  EXPECT_THAT(ids, IsSupersetOf({"a100", "h100", "h200", "l4", "rtx4090", "t4"}));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  for (const std::string& id : ids) {
    SCOPED_TRACE(id);
    GpuSpec s = load_gpu_spec(id);
    EXPECT_EQ(s.id, id);
    EXPECT_FALSE(s.name.empty());
    EXPECT_FALSE(s.queried);
    EXPECT_EQ(s.warp_size, 32);
    EXPECT_LE(s.smem_per_block, s.smem_per_block_optin);
    EXPECT_LE(s.smem_per_block_optin, s.smem_per_sm);
    EXPECT_GT(s.fp32_tflops, 0);
    EXPECT_GT(s.fp16_tensor_tflops, s.fp32_tflops);  // every shipped GPU has tensor cores
  }
}

TEST(GpuSpec, ShippedFiguresMatchThePublishedOnes) {
  GpuSpec h100 = load_gpu_spec("h100");
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.arch(), "sm_90");
  EXPECT_EQ(h100.sms, 132);
  EXPECT_EQ(h100.smem_per_block_optin, 227 * 1024);
  EXPECT_DOUBLE_EQ(h100.mem_bandwidth_gbs, 3350);

  GpuSpec a100 = load_gpu_spec("a100");
  EXPECT_EQ(a100.arch(), "sm_80");
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(a100.smem_per_block_optin, 163 * 1024);
  EXPECT_DOUBLE_EQ(a100.fp16_tensor_tflops, 312);

  GpuSpec l4 = load_gpu_spec("l4");
  EXPECT_EQ(l4.arch(), "sm_89");
  EXPECT_EQ(l4.max_threads_per_sm, 1536);

  GpuSpec t4 = load_gpu_spec("t4");
  EXPECT_EQ(t4.arch(), "sm_75");
  EXPECT_EQ(t4.bf16_tensor_tflops, 0);  // Turing has no bfloat16 tensor cores
  EXPECT_EQ(load_gpu_spec("h200").mem_bandwidth_gbs, 4800);
}

TEST(GpuSpec, ArchJoinsBothDigitsOfTheComputeCapability) {
  GpuSpec s;
  s.cc_major = 8, s.cc_minor = 6;
  EXPECT_EQ(s.arch(), "sm_86");
  s.cc_major = 10, s.cc_minor = 0;
  EXPECT_EQ(s.arch(), "sm_100");
  s.cc_major = 12, s.cc_minor = 1;
  EXPECT_EQ(s.arch(), "sm_121");
}

TEST(GpuSpec, IdIsCaseInsensitiveAndAPathWorksToo) {
  EXPECT_EQ(load_gpu_spec("H100").id, "h100");
  auto path = data_dir() / "configs" / "gpus" / "l4.json";
  GpuSpec l4 = load_gpu_spec(path.string());
  EXPECT_EQ(l4.id, "l4");
  EXPECT_EQ(l4.sms, 58);
}

TEST(GpuSpec, UnknownIdListsTheKnownOnes) {
  std::string known;
  for (const std::string& id : list_gpu_specs()) known += (known.empty() ? "" : ", ") + id;
  EXPECT_EQ(
      user_error([] { load_gpu_spec("h300"); }),
      "unknown GPU \"h300\": known GPUs are " + known + ", or give the path of a GPU config file");
  EXPECT_EQ(user_error([] { load_gpu_spec("/no/such/gpu.json"); }),
            "/no/such/gpu.json: no such GPU config file");
}

TEST(GpuSpec, JsonRoundTrip) {
  GpuSpec t4 = load_gpu_spec("t4");
  GpuSpec back = parse_gpu_spec(gpu_spec_to_json(t4), "t4.json", "t4");
  EXPECT_EQ(gpu_spec_to_json(back), gpu_spec_to_json(t4));
  EXPECT_EQ(back.id, "t4");
}

TEST(GpuSpec, UnknownKeyIsRejectedWithASuggestion) {
  json j = valid_config();
  j["smem_per_blok"] = 1;
  EXPECT_EQ(parse_error(j), "bad.json: smem_per_blok: unknown key (did you mean smem_per_block?)");
  j = valid_config();
  j["colour"] = "green";
  EXPECT_EQ(parse_error(j), "bad.json: colour: unknown key");
  j = valid_config();
  j["queried"] = true;  // set by the device query, never by a file
  EXPECT_EQ(parse_error(j), "bad.json: queried: unknown key");
}

TEST(GpuSpec, WrongTypesAndValuesNameTheKey) {
  json j = valid_config();
  j["sms"] = "many";
  EXPECT_EQ(parse_error(j), "bad.json: sms: expected a positive integer, got \"many\"");
  j["sms"] = 132.5;
  EXPECT_EQ(parse_error(j), "bad.json: sms: expected a positive integer, got 132.5");
  j["sms"] = 0;
  EXPECT_EQ(parse_error(j), "bad.json: sms: expected a positive integer, got 0");
  j = valid_config();
  j["cc_minor"] = -1;
  EXPECT_EQ(parse_error(j), "bad.json: cc_minor: expected an integer >= 0, got -1");
  j = valid_config();
  j["clock_ghz"] = 0;
  EXPECT_EQ(parse_error(j), "bad.json: clock_ghz: expected a positive number, got 0");
  j = valid_config();
  j["bf16_tensor_tflops"] = -1.5;
  EXPECT_EQ(parse_error(j),
            "bad.json: bf16_tensor_tflops: expected a number >= 0 (0: no such tensor cores), got "
            "-1.5");
  j = valid_config();
  j["name"] = 5;
  EXPECT_EQ(parse_error(j),
            "bad.json: name: expected the device name as a non-empty string, got 5");
  EXPECT_EQ(parse_error(json::array({1, 2})),
            "bad.json: expected a JSON object of GPU limits, got [1,2]");
}

TEST(GpuSpec, LimitsAreRequiredButWarpSizeAndRegisterCapAreNot) {
  json j = valid_config();
  j.erase("l2_bytes");
  EXPECT_EQ(parse_error(j), "bad.json: l2_bytes: required key is missing");
  j = valid_config();
  j.erase("name");
  EXPECT_EQ(parse_error(j), "bad.json: name: required key is missing");
  j = valid_config();
  j.erase("warp_size");
  j.erase("max_regs_per_thread");
  GpuSpec s = parse_gpu_spec(j, "ok.json", "ok");
  EXPECT_EQ(s.warp_size, 32);
  EXPECT_EQ(s.max_regs_per_thread, 255);
}

TEST(GpuSpec, ContradictoryLimitsAreRejected) {
  json j = valid_config();
  j["smem_per_block_optin"] = 1024;
  EXPECT_EQ(parse_error(j),
            "bad.json: smem_per_block_optin: 1024 is less than smem_per_block (49152)");
  j = valid_config();
  j["smem_per_sm"] = 65536;
  EXPECT_EQ(parse_error(j),
            "bad.json: smem_per_sm: 65536 is less than smem_per_block_optin (232448)");
  j = valid_config();
  j["max_threads_per_sm"] = 512;
  EXPECT_EQ(parse_error(j),
            "bad.json: max_threads_per_sm: 512 is less than max_threads_per_block (1024)");
  j = valid_config();
  j["regs_per_sm"] = 32768;
  EXPECT_EQ(parse_error(j), "bad.json: regs_per_sm: 32768 is less than regs_per_block (65536)");
}

TEST(GpuSpec, BadJsonInAFileNamesTheFileAndPosition) {
  auto path = std::filesystem::temp_directory_path() / "dietcode_gpu_spec_test_bad.json";
  std::ofstream(path) << "{\"sms\": 132,\n \"name\" \"x\"}";
  EXPECT_EQ(user_error([&] { load_gpu_spec(path.string()); }),
            path.string() +
                ": invalid JSON: parse error at line 2, column 11: syntax error while parsing "
                "object separator - unexpected string literal; expected ':'");
  json j = valid_config();
  j["sms"] = "132";
  std::ofstream(path) << j.dump(2);
  EXPECT_EQ(user_error([&] { load_gpu_spec(path.string()); }),
            path.string() + ": sms: expected a positive integer, got \"132\"");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dietcode
