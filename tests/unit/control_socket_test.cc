#include "balancer/control/control_socket.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(ControlSocket, AnswersRequestsWithMode0600AndGoesAwayWithTheServer) {
  char pattern[] = "/tmp/numavm-ctl-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  std::string path;
  {
    absl::StatusOr<std::unique_ptr<ControlServer>> server =
        ControlServer::Start(dir, "t", [](const std::string& r) { return "you said " + r; });
    ASSERT_TRUE(server.ok()) << server.status();
    path = (*server)->path();
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(ListControlSockets(dir), std::vector<std::string>{path});
    absl::StatusOr<std::string> reply = ControlRequest(path, "report");
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(*reply, "you said report");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(absl::IsNotFound(ControlRequest(path, "report").status()));
  std::filesystem::remove_all(dir);
}

TEST(ControlSocket, RuntimeDirComesFromTheEnvironment) {
  setenv("NUMAVM_RUNTIME_DIR", "/tmp/elsewhere", 1);
  EXPECT_EQ(RuntimeDir(), "/tmp/elsewhere");
  unsetenv("NUMAVM_RUNTIME_DIR");
  EXPECT_FALSE(RuntimeDir().empty());
}

}  // namespace
}  // namespace numavm
