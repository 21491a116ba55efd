#include "cli/daemon_config.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(DaemonConfig, ShippedExampleLoads) {
  DaemonFlags flags;
  flags.config_path = std::string(NUMAVM_SOURCE_DIR) + "/configs/numavm-daemon.toml";
  absl::StatusOr<DaemonConfig> c = ResolveDaemonConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_address, "127.0.0.1");
  EXPECT_EQ(c->metrics_port, 9464);
}

TEST(DaemonConfig, BalanceKeyAndItsOldName) {
  DaemonConfig c;
  ASSERT_TRUE(ApplyDaemonToml("[daemon]\nbalance = \"off\"\n", "d.toml", c).ok());
  EXPECT_EQ(c.mode, BalanceMode::kOff);
  ASSERT_TRUE(ApplyDaemonToml("[daemon]\nmode = \"enforce\"\n", "d.toml", c).ok());
  EXPECT_EQ(c.mode, BalanceMode::kOn);
  absl::Status both =
      ApplyDaemonToml("[daemon]\nbalance = \"on\"\nmode = \"advise\"\n", "d.toml", c);
  EXPECT_TRUE(absl::IsInvalidArgument(both));
  EXPECT_NE(both.message().find("keep balance"), std::string::npos) << both;
  absl::Status bad = ApplyDaemonToml("[daemon]\nbalance = \"enforce-ish\"\n", "d.toml", c);
  EXPECT_NE(bad.message().find("want off, advise or on"), std::string::npos) << bad;
}

TEST(DaemonConfig, OverridePinningIsABooleanOffByDefault) {
  DaemonConfig c;
  EXPECT_FALSE(c.override_pinning);
  ASSERT_TRUE(ApplyDaemonToml("[daemon]\noverride_pinning = true\n", "d.toml", c).ok());
  EXPECT_TRUE(c.override_pinning);
  absl::Status bad = ApplyDaemonToml("[daemon]\noverride_pinning = \"yes\"\n", "d.toml", c);
  EXPECT_NE(bad.message().find("d.toml:2: daemon.override_pinning must be true or false"),
            std::string::npos)
      << bad;
}

TEST(DaemonConfig, BalanceFlagOverridesTheFile) {
  DaemonFlags flags;
  flags.config_path = std::string(NUMAVM_SOURCE_DIR) + "/configs/numavm-daemon.toml";
  flags.balance = "advise";
  absl::StatusOr<DaemonConfig> c = ResolveDaemonConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mode, BalanceMode::kAdvise);
  flags.balance = "enforce";  // the old --mode's word for on
  c = ResolveDaemonConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mode, BalanceMode::kOn);
}

TEST(DaemonConfig, FileThenFlags) {
  DaemonConfig c;
  ASSERT_TRUE(ApplyDaemonToml("[daemon]\nmode = \"advise\"\ninterval = \"2s\"\n"
                              "domains = [\"a\", \"b\"]\nmigrate_rate = \"1G\"\n"
                              "[metrics]\nport = 0\n",
                              "d.toml", c)
                  .ok());
  EXPECT_EQ(c.mode, BalanceMode::kAdvise);
  EXPECT_EQ(c.interval, absl::Seconds(2));
  EXPECT_EQ(c.domains, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.migrate_bytes_per_second, 1ull << 30);
  EXPECT_EQ(c.metrics_port, 0);
}

TEST(DaemonConfig, BadInputNamesTheProblem) {
  struct Bad {
    const char* text;
    const char* message;
  } cases[] = {
      {"[daemon]\nmode = \"sideways\"\n", "daemon.mode: unknown balance mode 'sideways'"},
      {"[daemon]\ninterval = \"1ms\"\n", "at least 100ms"},
      {"[daemon]\ncolour = 1\n", "unknown key 'colour' in [daemon]"},
      {"[metrics]\nport = 70000\n", "d.toml:2: metrics.port = 70000: want 0-65535"},
      {"[daemon]\nconnect = 5\n", "d.toml:2: daemon.connect must be a string"},
      {"[metrics]\naddress = 1\n", "metrics.address must be a string"},
      {"daemon = 1\n", "daemon must be a table"},
      {"[daemon]\ndomains = \"a\"\n", "daemon.domains must be a list"},
      {"[daemon\n", "d.toml: line 1"},
  };
  for (const Bad& b : cases) {
    DaemonConfig c;
    absl::Status s = ApplyDaemonToml(b.text, "d.toml", c);
    ASSERT_FALSE(s.ok()) << b.text;
    EXPECT_NE(s.message().find(b.message), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace numavm
