#include "balancer/control/control_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "balancer/control/control_client.h"
#include "tests/support/numavm_process.h"

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
    EXPECT_EQ(*ListControlSockets(dir), std::vector<std::string>{path});
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

std::string MakeDir() {
  char pattern[] = "/tmp/numavm-ctl-XXXXXX";
  return mkdtemp(pattern);
}

TEST(RuntimeDir, OnlyTheUsersOwnPrivateDirectoryIsUsed) {
  const std::string dir = MakeDir();
  EXPECT_TRUE(CheckRuntimeDir(dir).ok());
  EXPECT_TRUE(absl::IsNotFound(CheckRuntimeDir(dir + "/absent")));
  // Another user could have created it: group/other access is refused...
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  absl::Status wide = CheckRuntimeDir(dir);
  EXPECT_TRUE(absl::IsFailedPrecondition(wide)) << wide;
  EXPECT_NE(wide.message().find("has mode 0777"), std::string::npos) << wide;
  EXPECT_FALSE(ControlServer::Start(dir, "t", [](const std::string&) { return ""; }).ok());
  EXPECT_FALSE(ListControlSockets(dir).ok());
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  // ...so is a symlink to a directory, and a file.
  const std::string link = dir + "-link";
  ASSERT_EQ(symlink(dir.c_str(), link.c_str()), 0);
  EXPECT_NE(CheckRuntimeDir(link).message().find("is a symlink"), std::string::npos);
  EXPECT_FALSE(ListControlSockets(link).ok());
  unlink(link.c_str());
  std::ofstream(dir + "/file").put('x');
  EXPECT_NE(CheckRuntimeDir(dir + "/file").message().find("is not a directory"), std::string::npos);
  // A runtime dir that does not exist yet has no sockets (nothing ran).
  EXPECT_TRUE(ListControlSockets(dir + "/absent")->empty());
  std::filesystem::remove_all(dir);
}

TEST(ControlSocket, OnlySocketsAreListedAndOnlyStaleSocketsUnlinked) {
  const std::string dir = MakeDir();
  std::ofstream(dir + "/notes.sock").put('x');  // a file named like a socket
  EXPECT_TRUE(ListControlSockets(dir)->empty());
  EXPECT_FALSE(UnlinkStaleSocket(dir + "/notes.sock"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.sock"));
  // A server is not started over a file that is not a socket.
  absl::StatusOr<std::unique_ptr<ControlServer>> over =
      ControlServer::Start(dir, "notes", [](const std::string&) { return ""; });
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("is not a socket"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Idle clients that connect and say nothing cannot keep others waiting:
// the server reads every request at once.
TEST(ControlSocket, IdleClientsDoNotHideTheServerFromOthers) {
  const std::string dir = MakeDir();
  absl::StatusOr<std::unique_ptr<ControlServer>> server =
      ControlServer::Start(dir, "t", [](const std::string& r) { return "you said " + r; });
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, (*server)->path().c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  // Served within the client's 5 s, not after the idle ones time out one
  // after another (1 s each: 200 s with a server that serves in turn).
  absl::StatusOr<std::string> reply = ControlRequest((*server)->path(), "report", absl::Seconds(5));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, "you said report");
  for (int fd : idle) close(fd);
  std::filesystem::remove_all(dir);
}

TEST(ControlClient, MalformedReportsAreErrorsOrNotesNeverCrashes) {
  EXPECT_FALSE(ParsePeerReport("not json").ok());
  EXPECT_FALSE(ParsePeerReport("[]").ok());
  EXPECT_FALSE(ParsePeerReport("{}").ok());
  EXPECT_FALSE(ParsePeerReport(R"({"vms": 1})").ok());
  EXPECT_FALSE(ParsePeerReport(R"({"vms": [], "pid": "x"})").ok());
  EXPECT_FALSE(ParsePeerReport(R"({"vms": [], "pid": -4})").ok());
  EXPECT_FALSE(ParsePeerReport(R"({"vms": [], "process": 5})").ok());
  // Found by fuzz_control_reply: numbers that do not fit (a float cast to
  // int was undefined behaviour) make that VM entry a problem.
  const std::string huge = R"({"vms":[{"name":"vm","kind":"numavm","vcpus":1e300,)"
                           R"("memory_bytes":1,"memory_per_node":{},"vcpus_per_node":{}},)"
                           R"({"name":"vm2","kind":"numavm","vcpus":1,"memory_bytes":-1,)"
                           R"("memory_per_node":{},"vcpus_per_node":{}},)"
                           R"({"name":"vm3","kind":"numavm","vcpus":1,"memory_bytes":1,)"
                           R"("memory_per_node":{"0":2.5},"vcpus_per_node":{}}]})";
  absl::StatusOr<PeerReport> odd = ParsePeerReport(huge);
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_TRUE(odd->vms.empty());
  EXPECT_EQ(odd->problems.size(), 3u);
  absl::StatusOr<PeerReport> one = ParsePeerReport(R"({"vms": [1, {"name": 2}]})");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->vms.empty());
  EXPECT_EQ(one->problems.size(), 2u);
}

// `numavm detach --all` against peers that say something malformed or refuse:
// no crash, and a failure is a failure (exit 5), not "nothing was attached".
TEST(ControlClient, DetachReportsPeersThatFail) {
  const std::string dir = MakeDir();
  setenv("NUMAVM_RUNTIME_DIR", dir.c_str(), 1);
  {
    absl::StatusOr<std::unique_ptr<ControlServer>> odd =
        ControlServer::Start(dir, "odd", [](const std::string&) { return R"({"vms":[1]})"; });
    ASSERT_TRUE(odd.ok()) << odd.status();
    testing::ProcessResult r = testing::RunNumavm({"detach", "--all"});
    EXPECT_EQ(r.term_signal, 0);
    EXPECT_EQ(r.exit_code, 0) << r.err;  // it balances no domain: nothing to detach
    EXPECT_NE(r.out.find("nothing was attached"), std::string::npos) << r.out;
  }
  {
    const std::string vm =
        R"({"name":"web1","kind":"libvirt","vcpus":1,"memory_bytes":1,"memory_per_node":{},)"
        R"("vcpus_per_node":{}})";
    absl::StatusOr<std::unique_ptr<ControlServer>> refusing =
        ControlServer::Start(dir, "refusing", [&](const std::string& request) {
          if (request == "report")
            return absl::StrCat(R"({"process":"numavm attach","pid":1,"vms":[)", vm, "]}");
          return std::string("error: it would not let go");
        });
    ASSERT_TRUE(refusing.ok()) << refusing.status();
    testing::ProcessResult r = testing::RunNumavm({"detach", "--all"});
    EXPECT_EQ(r.term_signal, 0);
    EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
    EXPECT_NE(r.err.find("web1: it would not let go"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("nothing was attached"), std::string::npos) << r.out;
  }
  unsetenv("NUMAVM_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace numavm
