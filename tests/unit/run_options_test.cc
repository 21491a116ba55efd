#include "cli/run_options.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "cli/run_config_file.h"

namespace numavm {
namespace {

TEST(ApplyRunConfig, ReadsEveryTable) {
  RunOptions o;
  absl::Status s = ApplyRunConfig(R"(
[vm]
vcpus = 4
memory = "1G"
backing = "anon"
timeout = "90s"

[payload]
name = "numa01"
args = "iterations=3"

[placement]
mode = "hard"

[report]
format = "json"

[[cell]]
memory = "512M"
vcpus = [0, 1]

[[cell]]
memory = "512M"
vcpus = [2, 3]
)",
                                  "test.toml", o);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(o.vm.vcpus, 4);
  EXPECT_EQ(o.vm.memory_bytes, 1ull << 30);
  EXPECT_EQ(o.vm.backing, Backing::kAnon);
  EXPECT_EQ(o.vm.timeout, absl::Seconds(90));
  EXPECT_EQ(o.payload, "numa01");
  EXPECT_EQ(o.vm.payload_args, "iterations=3");
  EXPECT_EQ(o.placement, StaticPlacement::kHard);
  EXPECT_EQ(o.report, ReportFormat::kJson);
  ASSERT_EQ(o.vm.cells.size(), 2u);
  EXPECT_EQ(o.vm.cells[1].vcpus, (std::vector<int>{2, 3}));
}

TEST(ApplyRunConfig, MalformedTomlNamesFileAndLine) {
  RunOptions o;
  absl::Status s = ApplyRunConfig("[vm]\nvcpus = = 2\n", "bad.toml", o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StartsWith(s.message(), "bad.toml: line 2")) << s.message();
}

TEST(ApplyRunConfig, UnknownKeysAreErrorsNotSilentDefaults) {
  RunOptions o;
  absl::Status s = ApplyRunConfig("[vm]\nvcpu = 2\n", "typo.toml", o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown key 'vcpu' in [vm]"), absl::string_view::npos);
  EXPECT_FALSE(ApplyRunConfig("[vmm]\n", "t.toml", o).ok());
}

TEST(ApplyRunConfig, WrongTypesAreErrors) {
  RunOptions o;
  EXPECT_FALSE(ApplyRunConfig("[vm]\nvcpus = \"two\"\n", "t.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[vm]\nmemory = \"lots\"\n", "t.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[vm]\nbacking = \"tmpfs\"\n", "t.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[placement]\nmode = \"random\"\n", "t.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[[cell]]\nmemory = \"16M\"\n", "t.toml", o).ok());
}

// A size is a string or a whole number. A float is refused, even one far
// beyond int64's range (the fuzzer found `memory = 1e300` converting with
// undefined behaviour).
TEST(ApplyRunConfig, FloatSizesAreErrors) {
  for (const char* text :
       {"[vm]\nmemory = 1e300\n", "[vm]\nmemory = -1e300\n", "[vm]\nmemory = 1.0\n",
        "[vm]\nmemory = nan\n", "[[cell]]\nmemory = 1e300\n"}) {
    RunOptions o;
    absl::Status s = ApplyRunConfig(text, "t.toml", o);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find("must be a size such as"), absl::string_view::npos) << s.message();
  }
  RunOptions o;
  ASSERT_TRUE(ApplyRunConfig("[vm]\nmemory = 67108864\n", "t.toml", o).ok());
  EXPECT_EQ(o.vm.memory_bytes, 64ull << 20);
}

TEST(ResolveRunOptions, FlagsOverrideTheDefaults) {
  RunFlags f;
  f.vcpus = 2;
  f.memory = "64M";
  f.payload = "shared";
  f.payload_args = {"size=4M", "iterations=2"};
  f.placement = "inverse";
  f.report = "json";
  f.timeout = "5m";
  absl::StatusOr<RunOptions> o = ResolveRunOptions(f);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->vm.vcpus, 2);
  EXPECT_EQ(o->vm.memory_bytes, 64ull << 20);
  EXPECT_EQ(o->vm.payload_args, "size=4M iterations=2");
  EXPECT_EQ(o->placement, StaticPlacement::kInverse);
  EXPECT_EQ(o->vm.timeout, absl::Minutes(5));
}

TEST(ResolveRunOptions, RejectsBadFlagValues) {
  RunFlags bad_arg;
  bad_arg.payload_args = {"iterations"};
  EXPECT_FALSE(ResolveRunOptions(bad_arg).ok());
  RunFlags bad_report;
  bad_report.report = "xml";
  EXPECT_FALSE(ResolveRunOptions(bad_report).ok());
  RunFlags bad_timeout;
  bad_timeout.timeout = "-3s";
  EXPECT_FALSE(ResolveRunOptions(bad_timeout).ok());
  RunFlags missing_file;
  missing_file.config_path = "/nonexistent/numavm.toml";
  EXPECT_FALSE(ResolveRunOptions(missing_file).ok());
}

// Pages move one way per run: protected (the default), unmapped or mapped;
// two of them at once is a mistake the user hears about.
TEST(ResolveRunOptions, OneWayForPagesToMove) {
  absl::StatusOr<RunOptions> d = ResolveRunOptions(RunFlags{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->migrate_mapped);
  EXPECT_FALSE(d->migrate_unmapped);
  RunFlags mapped;
  mapped.migrate_mapped = true;
  absl::StatusOr<RunOptions> m = ResolveRunOptions(mapped);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->migrate_mapped);
  for (auto [a, b] : {std::pair{&RunFlags::migrate_mapped, &RunFlags::migrate_unmapped},
                      std::pair{&RunFlags::migrate_protected, &RunFlags::migrate_unmapped},
                      std::pair{&RunFlags::migrate_protected, &RunFlags::migrate_mapped}}) {
    RunFlags two;
    two.*a = true;
    two.*b = true;
    absl::StatusOr<RunOptions> o = ResolveRunOptions(two);
    ASSERT_FALSE(o.ok());
    EXPECT_TRUE(absl::StrContains(o.status().message(), "choose one way")) << o.status();
  }
}

TEST(ParseCellSpec, ParsesSizeAndVcpuList) {
  absl::StatusOr<CellConfig> c = ParseCellSpec("256M:0-2,5");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->memory_bytes, 256ull << 20);
  EXPECT_EQ(c->vcpus, (std::vector<int>{0, 1, 2, 5}));
  EXPECT_FALSE(ParseCellSpec("256M").ok());
  EXPECT_FALSE(ParseCellSpec("256M:").ok());
  EXPECT_FALSE(ParseCellSpec("x:0").ok());
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// Every example in configs/ that `numavm run --config` takes must load.
TEST(ShippedConfigs, EveryRunConfigLoadsAndValidates) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(NUMAVM_SOURCE_DIR "/configs")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".toml" || absl::StartsWith(name, "topology") ||
        absl::StartsWith(name, "numavm-daemon")) {
      continue;  // topology files and the daemon's config have their own tests
    }
    RunFlags flags;
    flags.config_path = entry.path().string();
    absl::StatusOr<RunOptions> o = ResolveRunOptions(flags);
    ASSERT_TRUE(o.ok()) << name << ": " << o.status();
    EXPECT_TRUE(NormalizeVmConfig(o->vm).ok()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace numavm
