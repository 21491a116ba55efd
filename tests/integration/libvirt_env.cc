#include "tests/integration/libvirt_env.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace numavm::testing {
namespace {

struct State {
  std::string unavailable;
  std::optional<LibvirtConnection> conn;
  std::vector<pid_t> started;             // daemons we started
  pid_t libvirtd = 0;                     // ... of which libvirtd
  std::vector<std::string> domains;       // names of the domains we created
  std::optional<struct stat> kvm_before;  // /dev/kvm owner and mode to restore
  std::string dir;
  int next = 0;
};

State& S() {
  static State* s = new State;
  return *s;
}

pid_t StartDaemon(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

bool Exists(const char* path) { return access(path, F_OK) == 0; }

void GiveKvmToItsGroup() {
  struct stat st;
  if (stat("/dev/kvm", &st) != 0) return;
  group* kvm = getgrnam("kvm");
  if (kvm == nullptr) return;
  if (st.st_gid == kvm->gr_gid && (st.st_mode & 0060) == 0060) return;
  S().kvm_before = st;
  if (chown("/dev/kvm", st.st_uid, kvm->gr_gid) == 0) chmod("/dev/kvm", 0660);
}

void StopDaemon(pid_t pid) {
  kill(pid, SIGTERM);
  for (int i = 0; i < 200 && waitpid(pid, nullptr, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (waitpid(pid, nullptr, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

pid_t StartLibvirtd() {
  State& s = S();
  const pid_t pid = StartDaemon("/usr/sbin/libvirtd", {"--pid-file", s.dir + "/libvirtd.pid"},
                                s.dir + "/libvirtd.log");
  s.started.push_back(pid);
  return pid;
}

// (Re)opens the shared connection; the first answer waits for QEMU
// capability probing (~10 s).
absl::Status Reconnect() {
  State& s = S();
  absl::Status last;
  for (int i = 0; i < 600; ++i) {
    absl::StatusOr<LibvirtConnection> c = LibvirtConnection::Open(LibvirtEnv::uri());
    if (c.ok()) {
      s.conn.emplace(std::move(*c));
      return absl::OkStatus();
    }
    last = c.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::UnavailableError(absl::StrCat("libvirtd does not answer: ", last.message()));
}

}  // namespace

const std::string& LibvirtEnv::unavailable() { return S().unavailable; }
LibvirtConnection& LibvirtEnv::connection() { return *S().conn; }

void LibvirtEnv::SetUp() {
  State& s = S();
  if (geteuid() != 0) {
    s.unavailable = "needs root (a system libvirt daemon)";
    return;
  }
  if (!Exists("/usr/sbin/libvirtd") || !Exists("/usr/bin/qemu-system-x86_64")) {
    s.unavailable = "libvirtd or qemu-system-x86_64 is not installed (scripts/install-deps.sh)";
    return;
  }
  GiveKvmToItsGroup();
  if (!Exists("/run/libvirt/libvirt-sock")) {
    char pattern[] = "/tmp/numavm-libvirt-XXXXXX";
    s.dir = mkdtemp(pattern);
    std::filesystem::create_directories("/var/log/libvirt");
    std::filesystem::create_directories("/run/libvirt");
    if (!Exists("/run/libvirt/virtlogd-sock")) {
      s.started.push_back(StartDaemon("/usr/sbin/virtlogd", {}, s.dir + "/virtlogd.log"));
    }
    s.libvirtd = StartLibvirtd();
  }
  if (absl::Status c = Reconnect(); !c.ok()) s.unavailable = std::string(c.message());
}

absl::Status LibvirtEnv::RestartLibvirtd() {
  State& s = S();
  if (s.libvirtd == 0) {
    return absl::FailedPreconditionError(
        "libvirtd was running before the tests; they do not restart it");
  }
  s.conn.reset();
  StopDaemon(s.libvirtd);
  std::erase(s.started, s.libvirtd);
  s.libvirtd = StartLibvirtd();
  return Reconnect();
}

void LibvirtEnv::TearDown() {
  State& s = S();
  // By name through the current connection: handles from before a libvirtd
  // restart are dead.
  for (const std::string& name : s.domains) {
    if (!s.conn) break;
    absl::StatusOr<LibvirtDomain> d = s.conn->Lookup(name);
    if (d.ok() && d->active()) (void)d->Destroy();
  }
  s.domains.clear();
  s.conn.reset();
  for (auto it = s.started.rbegin(); it != s.started.rend(); ++it) StopDaemon(*it);
  if (s.kvm_before) {
    (void)chown("/dev/kvm", s.kvm_before->st_uid, s.kvm_before->st_gid);
    chmod("/dev/kvm", s.kvm_before->st_mode & 07777);
  }
  if (!s.dir.empty()) std::filesystem::remove_all(s.dir);
}

absl::StatusOr<LibvirtDomain> LibvirtEnv::CreateDomain(const std::string& backing, int vcpus,
                                                       int memory_mib, int cells,
                                                       const std::string& extra) {
  State& s = S();
  const std::string name = absl::StrCat("numavm-it-", getpid(), "-", s.next++, "-", backing);
  const std::string memory_backing =
      backing == "memfd"
          ? "<source type='memfd'/><access mode='shared'/><allocation mode='immediate'/>"
          : "<allocation mode='immediate'/>";
  std::string numa;
  if (cells > 0) {
    numa = "<cpu><numa>";
    for (int c = 0; c < cells; ++c) {
      const int first = c * vcpus / cells, last = (c + 1) * vcpus / cells - 1;
      absl::StrAppend(&numa, "<cell id='", c, "' cpus='", first, "-", last, "' memory='",
                      memory_mib / cells, "' unit='MiB'/>");
    }
    absl::StrAppend(&numa, "</numa></cpu>");
  }
  const std::string xml = absl::StrCat(
      "<domain type='qemu'><name>", name, "</name><memory unit='MiB'>", memory_mib,
      "</memory><vcpu placement='static'>", vcpus, "</vcpu><memoryBacking>", memory_backing,
      "</memoryBacking><os><type arch='x86_64' machine='pc'>hvm</type></os>", numa, extra,
      "<on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot>"
      "<on_crash>destroy</on_crash><devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
      "<memballoon model='none'/></devices></domain>");
  absl::StatusOr<LibvirtDomain> d = s.conn->CreateTransient(xml);
  if (d.ok()) s.domains.push_back(d->name());
  return d;
}

}  // namespace numavm::testing
