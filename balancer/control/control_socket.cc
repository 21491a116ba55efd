#include "balancer/control/control_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace numavm {
namespace {

absl::Status Errno(const std::string& what) { return ErrnoStatus(errno, what); }

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

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& dir,
                                                                    const std::string& name,
                                                                    Handler handler) {
  if (absl::Status s = EnsureRuntimeDir(dir); !s.ok()) return s;
  const std::string path = absl::StrCat(dir, "/", name, ".sock");
  absl::StatusOr<sockaddr_un> addr = Address(path);
  if (!addr.ok()) return addr.status();
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !UnlinkStaleSocket(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; not replacing it"));
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  // The socket is created with mode 0600 (no window with a wider mode).
  const mode_t old = umask(0177);
  const int bound = bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  umask(old);
  if (bound != 0 || listen(fd, SOMAXCONN) != 0) {
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
  // Clients whose request line is still arriving; served in order of
  // arrival of their last byte, each within kRequestTimeout of connecting.
  struct Pending {
    int fd;
    absl::Time deadline;
    std::string request;
  };
  std::deque<Pending> pending;
  auto answer = [&](Pending& c) {
    // The reply is written blocking, bounded by a send timeout.
    const int flags = fcntl(c.fd, F_GETFL);
    fcntl(c.fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval tv{1, 0};
    setsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    WriteAll(c.fd, handler_(c.request));
    close(c.fd);
  };
  while (!stopping_) {
    std::vector<pollfd> polls{{fd_, POLLIN, 0}};
    for (const Pending& c : pending) polls.push_back({c.fd, POLLIN, 0});
    if (poll(polls.data(), polls.size(), 200) < 0 && errno != EINTR) continue;
    const absl::Time now = absl::Now();
    std::deque<Pending> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& c = pending[i];
      bool done = false, drop = false;
      if (polls[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[512];
        const ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n > 0) {
          const char* nl = static_cast<const char*>(std::memchr(buf, '\n', n));
          c.request.append(buf, nl != nullptr ? nl - buf : n);
          done = nl != nullptr;
          drop = !done && c.request.size() > kMaxRequestBytes;
        } else if (n == 0) {
          done = true;  // the client closed its side: what it sent is the request
        } else if (errno != EAGAIN && errno != EINTR) {
          drop = true;
        }
      }
      if (!done && !drop && now >= c.deadline) drop = true;  // said nothing in time
      if (done) {
        answer(c);
      } else if (drop) {
        close(c.fd);
      } else {
        still.push_back(std::move(c));
      }
    }
    pending = std::move(still);
    if (polls[0].revents & POLLIN) {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) break;
        if (pending.size() >= static_cast<size_t>(kMaxPendingClients)) {
          close(pending.front().fd);
          pending.pop_front();
        }
        pending.push_back(Pending{c, absl::Now() + kRequestTimeout, std::string()});
      }
    }
  }
  for (const Pending& c : pending) close(c.fd);
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

absl::StatusOr<std::vector<std::string>> ListControlSockets(const std::string& dir) {
  std::vector<std::string> out;
  if (absl::Status s = CheckRuntimeDir(dir); !s.ok()) {
    if (absl::IsNotFound(s)) return out;  // nothing has run yet
    return s;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string path = e.path().string();
    struct stat st;
    if (!absl::EndsWith(path, ".sock") || lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      continue;
    }
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool UnlinkStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  return unlink(path.c_str()) == 0;
}

}  // namespace numavm
