#include "balancer/control/control_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::StatusOr<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Reads until EOF, `limit` bytes or the deadline.
absl::StatusOr<std::string> ReadAll(int fd, absl::Time deadline, size_t limit) {
  std::string out;
  char buf[4096];
  for (;;) {
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0) return absl::DeadlineExceededError("no reply in time");
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return absl::DeadlineExceededError("no reply in time");
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read");
    if (n == 0) return out;
    out.append(buf, n);
    if (out.size() > limit) return absl::ResourceExhaustedError("reply too long");
  }
}

bool WriteAll(int fd, const std::string& data) {
  size_t at = 0;
  while (at < data.size()) {
    ssize_t n = send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
  }
  return true;
}

}  // namespace

std::string RuntimeDir() {
  if (const char* d = std::getenv("NUMAVM_RUNTIME_DIR"); d != nullptr && *d != '\0') return d;
  if (geteuid() == 0) return "/run/numavm";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
    return absl::StrCat(x, "/numavm");
  }
  return absl::StrCat("/tmp/numavm-", geteuid());
}

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& dir,
                                                                    const std::string& name,
                                                                    Handler handler) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno(absl::StrCat("mkdir ", dir));
  const std::string path = absl::StrCat(dir, "/", name, ".sock");
  absl::StatusOr<sockaddr_un> addr = Address(path);
  if (!addr.ok()) return addr.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  unlink(path.c_str());  // a stale socket of a process that died
  // The socket is created with mode 0600 (no window with a wider mode).
  const mode_t old = umask(0177);
  const int bound = bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  umask(old);
  if (bound != 0 || listen(fd, 16) != 0) {
    absl::Status s = Errno(absl::StrCat("listen on ", path));
    close(fd);
    return s;
  }
  return std::unique_ptr<ControlServer>(new ControlServer(fd, path, std::move(handler)));
}

ControlServer::ControlServer(int fd, std::string path, Handler handler)
    : fd_(fd), path_(std::move(path)), handler_(std::move(handler)) {
  thread_ = std::thread([this] { Serve(); });
}

ControlServer::~ControlServer() {
  stopping_ = true;
  shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  close(fd_);
  unlink(path_.c_str());
}

void ControlServer::Serve() {
  while (!stopping_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    // One short line per request; a client that says nothing in a second
    // is dropped.
    std::string request;
    const absl::Time deadline = absl::Now() + absl::Seconds(1);
    char ch;
    while (request.size() < 4096 && absl::Now() < deadline) {
      pollfd q{c, POLLIN, 0};
      if (poll(&q, 1, 100) <= 0) continue;
      if (read(c, &ch, 1) != 1 || ch == '\n') break;
      request.push_back(ch);
    }
    WriteAll(c, handler_(request));
    close(c);
  }
}

absl::StatusOr<std::string> ControlRequest(const std::string& socket_path,
                                           const std::string& request, absl::Duration timeout) {
  absl::StatusOr<sockaddr_un> addr = Address(socket_path);
  if (!addr.ok()) return addr.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  if (connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    const int e = errno;
    absl::Status s = Errno(absl::StrCat("connect to ", socket_path));
    close(fd);
    // Nobody listens: the process that made the socket is gone.
    if (e == ECONNREFUSED || e == ENOENT) return absl::NotFoundError(s.message());
    return s;
  }
  absl::StatusOr<std::string> reply = absl::UnavailableError("write failed");
  if (WriteAll(fd, request + "\n")) reply = ReadAll(fd, absl::Now() + timeout, 64 << 20);
  close(fd);
  return reply;
}

std::vector<std::string> ListControlSockets(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (absl::EndsWith(e.path().string(), ".sock")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace numavm
