// The kernel list of `tune --kernels`: the array form fills the tunables it leaves out with the
// template's defaults and drops repeats; a tuning log (.jsonl, .jsonl.gz) gives the kernels of
// its measurement records, once each, in the order of their first record; every error is one
// line naming the file, the JSON path (a log's: the line) and what is wrong.
#include "search/kernel_list.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

class KernelListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dietcode_kernel_list_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The one-line message read_kernel_list throws for `path`, or "" when it throws nothing.
  static std::string error_of(const std::string& path) {
    try {
      read_kernel_list(path);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

MicroKernel dense_default_with(std::map<std::string, int> changes) {
  MicroKernel mk = dense_f32_space().defaults();
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return mk;
}

// A measurement record of `mk` on instance T (a line of a tuning log).
std::string record_line(const std::string& mk_json, int t, const std::string& status = "ok") {
  const std::string latency = status == "ok" ? "\"latency_us\": 12.5, " : "";
  return "{\"kind\": \"measurement\", \"workload\": \"w\", \"op\": \"qkv\", \"mk\": " + mk_json +
         ", \"shape\": {\"T\": " + std::to_string(t) +
         "}, \"gemm\": {\"batch\": 1, \"M\": 16, \"N\": 64, \"K\": 64}, \"status\": \"" + status +
         "\", " + latency +
         "\"device\": \"d\", \"arch\": \"sm_90\", \"simulated\": true, "
         "\"tool_version\": \"0.1.0\", \"timestamp\": \"2025-03-01T12:00:00.123Z\"}\n";
}

TEST_F(KernelListTest, TheArrayFormFillsLeftOutTunablesWithTheTemplatesDefaults) {
  const KernelList list = parse_kernel_list(R"([
      {"template": "dense_f32", "params": {"WARPS_M": 2, "TM": 16}},
      {"template": "dense_f32"},
      {"template": "x86_avx2_f32", "params": {}}
    ])",
                                            "ab.json");
  ASSERT_EQ(list.kernels.size(), 3u);
  EXPECT_EQ(list.kernels[0].mk, dense_default_with({{"WARPS_M", 2}, {"TM", 16}}));
  EXPECT_EQ(list.kernels[0].origin, "ab.json[0]");
  EXPECT_EQ(list.kernels[1].mk, dense_f32_space().defaults());
  EXPECT_EQ(list.kernels[1].origin, "ab.json[1]");
  EXPECT_EQ(list.kernels[2].mk, template_space("x86_avx2_f32").defaults());
  EXPECT_EQ(list.kernels[2].origin, "ab.json[2]");
  EXPECT_TRUE(list.notes.empty());
}

TEST_F(KernelListTest, AKernelListedTwiceIsTimedOnce) {
  // The second spells out the default the first leaves out: the same kernel.
  const int tm = dense_f32_space().defaults().get("TM");
  const KernelList list = parse_kernel_list(
      R"([{"template": "dense_f32", "params": {"TN": 4}},
          {"template": "dense_f32", "params": {"TN": 4, "TM": )" +
          std::to_string(tm) + R"(}},
          {"template": "dense_f32", "params": {"TN": 2}}])",
      "ab.json");
  ASSERT_EQ(list.kernels.size(), 2u);
  EXPECT_EQ(list.kernels[0].origin, "ab.json[0]");
  EXPECT_EQ(list.kernels[1].origin, "ab.json[2]");
  EXPECT_EQ(list.kernels[1].mk, dense_default_with({{"TN", 2}}));
}

// "a, b and c": how the messages list what there is.
std::string listing(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

TEST_F(KernelListTest, EveryArrayErrorNamesTheFileAndTheJsonPath) {
  std::vector<std::string> tunables, templates;
  for (const Tunable& t : dense_f32_space().tunables) tunables.push_back(t.name);
  for (const TemplateSpace* t : all_template_spaces()) templates.push_back(t->tmpl);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([{"template": "dense_f32", "params": {"WARPS_M": 2}},
           {"template": "dense_f32", "params": {"TM": 16.5}}])",
       "ab.json: [1].params.TM: expected an integer, got 16.5"},
      {R"([{"template": "dense_f32", "params": {"TM": "8"}}])",
       "ab.json: [0].params.TM: expected an integer, got \"8\""},
      {R"([{"template": "dense_f32", "params": {"TM": 4294967296}}])",
       "ab.json: [0].params.TM: must be at most 2147483647, got 4294967296"},
      {R"([{"template": "dense_f32", "params": {"TX": 8}}])",
       "ab.json: [0].params.TX: dense_f32 has no tunable \"TX\" (did you mean \"TM\"?); its "
       "tunables are " +
           listing(tunables)},
      {R"([{"template": "dense_f31"}])",
       "ab.json: [0].template: unknown template \"dense_f31\" (did you mean \"dense_f32\"?); the "
       "templates are " +
           listing(templates)},
      {R"([{"template": 7}])", "ab.json: [0].template: expected a string, got 7"},
      {R"([{"params": {"TM": 8}}])", "ab.json: [0]: missing key \"template\""},
      {R"([{"template": "dense_f32", "parms": {}}])",
       "ab.json: [0]: unknown key \"parms\" (did you mean \"params\"?)"},
      {R"([{"template": "dense_f32", "params": [8]}])",
       "ab.json: [0].params: expected an object, got an array"},
      {R"([{"template": "dense_f32"}, "dense_f32"])",
       "ab.json: [1]: expected a kernel {\"template\": NAME, \"params\": {TUNABLE: INTEGER, ...}}, "
       "got \"dense_f32\""},
      {R"({"template": "dense_f32"})",
       "ab.json: expected an array of kernels [{\"template\": NAME, \"params\": {TUNABLE: "
       "INTEGER, ...}}, ...], got an object (a tuning log is read as one when its name ends in "
       ".jsonl or .jsonl.gz)"},
      {"[]", "ab.json: expected at least one kernel, got an empty array"},
      {" \n", "ab.json: empty file (expected a JSON array of kernels)"},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_kernel_list(text, "ab.json");
      ADD_FAILURE() << "no error for " << text;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), message) << text;
    }
  }
  // Syntax errors are the strict JSON reader's, one line naming the file.
  const std::string syntax = error_of(write("cut.json", R"([{"template": "dense_f32"},)"));
  EXPECT_EQ(syntax.rfind((dir_ / "cut.json").string() + ": not valid JSON: ", 0), 0u) << syntax;
  EXPECT_EQ(syntax.find('\n'), std::string::npos) << syntax;
}

TEST_F(KernelListTest, AnUnreadableFileIsOneLineNamingIt) {
  const std::string missing = (dir_ / "nope.json").string();
  EXPECT_EQ(error_of(missing), missing + ": cannot read: No such file or directory");
  EXPECT_EQ(error_of(dir_.string()), dir_.string() + ": cannot read: Is a directory");
  const std::string missing_log = (dir_ / "nope.jsonl").string();
  EXPECT_EQ(error_of(missing_log), missing_log + ": no such tuning log");
}

TEST_F(KernelListTest, ALogGivesTheKernelsOfItsRecordsOnceInTheOrderTheyFirstAppear) {
  const std::string a = R"({"template": "dense_f32", "params": {"TM": 4}})";
  const std::string b = R"({"template": "dense_f32", "params": {"TM": 2}})";
  const std::string text = record_line(a, 1) + record_line(b, 1, "compile_error") +
                           "{\"kind\": \"cost_model_quality\", \"op\": \"qkv\"}\n" +
                           record_line(a, 2) +
                           "{\"kind\": \"measurement\", \"op\": \"to\n" +  // torn by a crash
                           record_line(b, 2, "compile_error");
  const std::string path = write("other.jsonl", text);
  const KernelList list = read_kernel_list(path);
  ASSERT_EQ(list.kernels.size(), 2u);
  // Left-out tunables (a log of an older build) take the defaults, as the array form's do.
  EXPECT_EQ(list.kernels[0].mk, dense_default_with({{"TM", 4}}));
  EXPECT_EQ(list.kernels[0].origin, path + ":1");
  // Failed elsewhere is no reason not to time it here.
  EXPECT_EQ(list.kernels[1].mk, dense_default_with({{"TM", 2}}));
  EXPECT_EQ(list.kernels[1].origin, path + ":2");
  // The log reader's own note for the torn line.
  ASSERT_EQ(list.notes.size(), 1u);
  EXPECT_EQ(list.notes[0].rfind(path + ":5: skipped: ", 0), 0u) << list.notes[0];

  // Compressed, the same kernels.
  const std::string gz = (dir_ / "other.jsonl.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), unsigned(text.size())), int(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  const KernelList unzipped = read_kernel_list(gz);
  ASSERT_EQ(unzipped.kernels.size(), 2u);
  EXPECT_EQ(unzipped.kernels[0].mk, list.kernels[0].mk);
  EXPECT_EQ(unzipped.kernels[1].mk, list.kernels[1].mk);
  EXPECT_EQ(unzipped.kernels[1].origin, gz + ":2");
}

TEST_F(KernelListTest, ALogsErrorsNameItsLineAndThePathInTheRecord) {
  const std::string ok = R"({"template": "dense_f32", "params": {"TM": 4}})";
  const std::string path =
      write("bad.jsonl", record_line(ok, 1) + "\n" +
                             record_line(R"({"template": "dense_f99", "params": {"TM": 4}})", 1));
  EXPECT_EQ(error_of(path).rfind(path + ":3: mk.template: unknown template \"dense_f99\"", 0), 0u)
      << error_of(path);
  const std::string tunable =
      write("tunable.jsonl", record_line(R"({"template": "dense_f32", "params": {"XX": 4}})", 1));
  EXPECT_EQ(
      error_of(tunable).rfind(tunable + ":1: mk.params.XX: dense_f32 has no tunable \"XX\"", 0), 0u)
      << error_of(tunable);
  const std::string empty =
      write("empty.jsonl", "{\"kind\": \"cost_model_quality\", \"op\": \"qkv\"}\n");
  EXPECT_EQ(error_of(empty),
            empty + ": no measurement records in this tuning log, so no kernels to time");
}

}  // namespace
}  // namespace dietcode
