// The pack object cache (src/pack/object_cache.h): an entry comes back only under its own key
// and only whole; a cache without a folder or without a compiler identity keeps nothing.
#include "pack/object_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace dietcode {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dietcode-object-cache-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    write(dir_ / "unit.o", object_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (fs::exists(dir_ / "cache"))
      for (const auto& e : fs::directory_iterator(dir_ / "cache")) out.push_back(e.path());
    return out;
  }

  fs::path dir_;
  const std::string object_ = std::string(
      "\x7f"
      "ELF object bytes\n\0with a NUL",
      29);
};

TEST_F(ObjectCacheTest, AStoredObjectComesBackUnderItsKeyOnly) {
  ObjectCache cache(dir_ / "cache", "g++\ng++ (Debian 12.2.0-14) 12.2.0\n");
  std::string key = cache.key("test key 1");
  ObjectCache::add(key, "source", "int f() { return 1; }");
  std::string other = cache.key("test key 1");
  ObjectCache::add(other, "source", "int f() { return 2; }");

  EXPECT_FALSE(cache.fetch(key, dir_ / "out.o")) << "an empty cache has nothing";
  ASSERT_TRUE(cache.store(key, dir_ / "unit.o"));
  ASSERT_EQ(entries().size(), 1u);
  ASSERT_TRUE(cache.fetch(key, dir_ / "out.o"));
  EXPECT_EQ(read(dir_ / "out.o"), object_);
  EXPECT_FALSE(cache.fetch(other, dir_ / "other.o"));
  EXPECT_FALSE(fs::exists(dir_ / "other.o"));

  // Another compiler's cache never hands out this compiler's objects.
  ObjectCache clang(dir_ / "cache", "clang++\nDebian clang version 14.0.6\n");
  std::string same_text = clang.key("test key 1");
  ObjectCache::add(same_text, "source", "int f() { return 1; }");
  EXPECT_FALSE(clang.fetch(same_text, dir_ / "clang.o"));
}

TEST_F(ObjectCacheTest, AnEntryCutShortOrChangedIsAMiss) {
  ObjectCache cache(dir_ / "cache", "g++ 12");
  const std::string key = cache.key("test key 1");
  ASSERT_TRUE(cache.store(key, dir_ / "unit.o"));
  const fs::path entry = entries().at(0);
  const std::string whole = read(entry);

  fs::resize_file(entry, whole.size() - 1);
  EXPECT_FALSE(cache.fetch(key, dir_ / "out.o")) << "a truncated entry";
  std::string changed = whole;
  changed.back() ^= 1;
  write(entry, changed);
  EXPECT_FALSE(cache.fetch(key, dir_ / "out.o")) << "a flipped bit in the object";
  changed = whole;
  changed[whole.find("test key") + 1] ^= 1;
  write(entry, changed);
  EXPECT_FALSE(cache.fetch(key, dir_ / "out.o")) << "another key under this key's name";
  EXPECT_FALSE(fs::exists(dir_ / "out.o"));

  write(entry, whole);
  EXPECT_TRUE(cache.fetch(key, dir_ / "out.o"));
}

TEST_F(ObjectCacheTest, WithoutAFolderOrACompilerIdentityNothingIsKept) {
  for (const ObjectCache& off : {ObjectCache({}, "g++ 12"), ObjectCache(dir_ / "cache", "")}) {
    EXPECT_FALSE(off.enabled());
    const std::string key = off.key("test key 1");
    EXPECT_FALSE(off.store(key, dir_ / "unit.o"));
    EXPECT_FALSE(off.fetch(key, dir_ / "out.o"));
  }
  EXPECT_TRUE(entries().empty());
}

TEST(ObjectCacheKey, FieldsAreLengthPrefixedSoNoTwoKeysPrintAlike) {
  std::string a, b;
  ObjectCache::add(a, "flag", "-O2\nflag 3\n-g0");
  ObjectCache::add(b, "flag", "-O2");
  ObjectCache::add(b, "flag", "-g0");
  EXPECT_NE(a, b);
}

TEST(CompilerIdentity, NamesTheProgramAndItsVersionOrNothing) {
  EXPECT_EQ(compiler_identity("no-such-compiler-dietcode", fs::temp_directory_path()), "");
  const std::string cxx = compiler_identity("c++", fs::temp_directory_path());
  ASSERT_FALSE(cxx.empty()) << "the tests' machine has a C++ compiler";
  EXPECT_EQ(cxx.rfind("c++\n", 0), 0u) << cxx;
}

}  // namespace
}  // namespace dietcode
