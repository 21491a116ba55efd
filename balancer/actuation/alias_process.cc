#include "balancer/actuation/alias_process.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000  // Linux 4.17; older kernels take it as a hint
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace numavm {
namespace {

enum : uint32_t { kPopulate = 1, kDrop = 2, kMap = 3 };

// One request: a header and up to kMaxRanges ranges, one SOCK_SEQPACKET
// message (kMap: one range, the file's offset and length, then the wanted
// address, and the file as SCM_RIGHTS); the reply is an errno (0: done)
// and a value (kMap: the child's address).
struct Header {
  uint32_t op;
  uint32_t count;
};
struct WireRange {
  uint64_t start;
  uint64_t bytes;
};
struct WireReply {
  int32_t err;
  uint32_t pad;
  uint64_t value;
};
constexpr uint32_t kMaxRanges = 256;
constexpr size_t kMaxMessage = sizeof(Header) + kMaxRanges * sizeof(WireRange);

// The child, from fork to _exit: system calls only.
int ApplyInChild(uint32_t op, const WireRange& r) {
  void* start = reinterpret_cast<void*>(r.start);
  // A write fault maps the page it asks for, no more (a read fault maps the
  // neighbours in the page cache too, which would stay mapped here). It
  // writes no data. Before Linux 5.14: EINVAL, and pages move where they are.
  const int advice = op == kPopulate ? MADV_POPULATE_WRITE : op == kDrop ? MADV_DONTNEED : -1;
  if (advice < 0) return EINVAL;
  return ::madvise(start, r.bytes, advice) == 0 ? 0 : errno;
}

WireReply MapInChild(const unsigned char* body, size_t length, int fd) {
  WireReply reply = {};
  WireRange file;
  uint64_t at;
  if (fd < 0 || length != sizeof(file) + sizeof(at)) {
    reply.err = EINVAL;
  } else {
    __builtin_memcpy(&file, body, sizeof(file));
    __builtin_memcpy(&at, body + sizeof(file), sizeof(at));
    const off_t offset = static_cast<off_t>(file.start);
    void* p = ::mmap(reinterpret_cast<void*>(at), file.bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED_NOREPLACE, fd, offset);
    if (p == MAP_FAILED) {  // taken here: anywhere
      p = ::mmap(nullptr, file.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    }
    if (p == MAP_FAILED) {
      reply.err = errno;
    } else {
      reply.value = reinterpret_cast<uint64_t>(p);
    }
  }
  if (fd >= 0) ::close(fd);  // the mapping keeps the file
  return reply;
}

[[noreturn]] void ServeInChild(int fd) {
  alignas(8) unsigned char message[kMaxMessage];
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
  for (;;) {
    iovec iov = {message, sizeof(message)};
    msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < static_cast<ssize_t>(sizeof(Header))) ::_exit(0);  // the parent is done
    int passed = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        __builtin_memcpy(&passed, CMSG_DATA(c), sizeof(passed));
      }
    }
    Header h;
    __builtin_memcpy(&h, message, sizeof(h));
    WireReply reply = {};
    if (h.op == kMap) {
      reply = MapInChild(message + sizeof(Header), static_cast<size_t>(n) - sizeof(Header), passed);
    } else {
      if (passed >= 0) ::close(passed);
      if (h.count > kMaxRanges ||
          static_cast<size_t>(n) != sizeof(Header) + h.count * sizeof(WireRange)) {
        reply.err = EINVAL;
      }
      for (uint32_t i = 0; i < h.count && reply.err == 0; ++i) {
        WireRange r;
        __builtin_memcpy(&r, message + sizeof(Header) + i * sizeof(WireRange), sizeof(r));
        reply.err = ApplyInChild(h.op, r);
      }
    }
    if (::write(fd, &reply, sizeof(reply)) != static_cast<ssize_t>(sizeof(reply))) ::_exit(0);
  }
}

[[noreturn]] void ChildMain(int fd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent ended before the line above
  ::prctl(PR_SET_NAME, "numavm-alias");
  // The signals that stop numavm are for numavm: the child ends with it.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM}) {
    ::sigaction(sig, &ignore, nullptr);
  }
  // Nothing of the parent's stays open here but the socket: a copy of a
  // userfaultfd or a KVM fd would keep them alive after the parent closed
  // them, and a copy of a pipe would keep its reader waiting.
  if (fd != 3) {
    if (::dup2(fd, 3) != 3) ::_exit(1);
    fd = 3;
  }
  for (int i = 0; i < 3; ++i) ::close(i);
  if (::syscall(SYS_close_range, 4u, ~0u, 0u) != 0) {
    struct rlimit limit = {};
    const rlim_t last =
        ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536 ? limit.rlim_cur : 65536;
    for (rlim_t i = 4; i < last; ++i) ::close(static_cast<int>(i));
  }
  ServeInChild(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AliasProcess>> AliasProcess::Start() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return ErrnoStatus(errno, "socketpair for the alias process");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    absl::Status s = ErrnoStatus(errno, "fork of the alias process");
    ::close(sv[0]);
    ::close(sv[1]);
    return s;
  }
  if (pid == 0) ChildMain(sv[1], parent);
  ::close(sv[1]);
  struct timeval tv = absl::ToTimeval(kReplyTimeout);
  ::setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return std::unique_ptr<AliasProcess>(new AliasProcess(pid, sv[0]));
}

AliasProcess::~AliasProcess() {
  {
    absl::MutexLock lock(&mu_);
    if (socket_ >= 0) ::close(socket_);
  }
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<AliasProcess::Reply> AliasProcess::Exchange(const void* message, size_t length,
                                                           int fd) {
  if (socket_ < 0) return absl::UnavailableError("the alias process is gone");
  iovec iov = {const_cast<void*>(message), length};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    __builtin_memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket_, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  int io_errno = sent == static_cast<ssize_t>(length) ? 0 : (sent < 0 ? errno : EPROTO);
  WireReply reply = {};
  if (io_errno == 0) {
    ssize_t got;
    do {
      got = ::recv(socket_, &reply, sizeof(reply), 0);
    } while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof(reply))) io_errno = got < 0 ? errno : EPIPE;
  }
  if (io_errno != 0) {
    // A child that died or hangs is of no more use: end it.
    ::close(socket_);
    socket_ = -1;
    ::kill(pid_, SIGKILL);
    return ErrnoStatus(io_errno, absl::StrCat("alias process ", pid_));
  }
  return Reply{reply.err, reply.value};
}

absl::StatusOr<uint8_t*> AliasProcess::Map(int fd, uint64_t offset, uint64_t bytes,
                                           const uint8_t* at) {
  alignas(8) unsigned char message[sizeof(Header) + sizeof(WireRange) + sizeof(uint64_t)];
  const Header h{kMap, 1};
  const WireRange file{offset, bytes};
  const uint64_t want = reinterpret_cast<uint64_t>(at);
  __builtin_memcpy(message, &h, sizeof(h));
  __builtin_memcpy(message + sizeof(h), &file, sizeof(file));
  __builtin_memcpy(message + sizeof(h) + sizeof(file), &want, sizeof(want));
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Reply> r = Exchange(message, sizeof(message), fd);
  if (!r.ok()) return r.status();
  if (r->err != 0) return ErrnoStatus(r->err, "mapping guest memory in the alias process");
  return reinterpret_cast<uint8_t*>(r->value);
}

absl::Status AliasProcess::Populate(const std::vector<Range>& ranges) {
  return Request(kPopulate, ranges);
}

absl::Status AliasProcess::Drop(const std::vector<Range>& ranges) { return Request(kDrop, ranges); }

absl::Status AliasProcess::Request(uint32_t op, const std::vector<Range>& ranges) {
  alignas(8) unsigned char message[kMaxMessage];
  absl::MutexLock lock(&mu_);
  for (size_t first = 0; first < ranges.size(); first += kMaxRanges) {
    const Header h{op, static_cast<uint32_t>(std::min<size_t>(kMaxRanges, ranges.size() - first))};
    __builtin_memcpy(message, &h, sizeof(h));
    for (uint32_t i = 0; i < h.count; ++i) {
      const Range& r = ranges[first + i];
      const WireRange w{reinterpret_cast<uint64_t>(r.start), r.bytes};
      __builtin_memcpy(message + sizeof(Header) + i * sizeof(WireRange), &w, sizeof(w));
    }
    absl::StatusOr<Reply> r = Exchange(message, sizeof(Header) + h.count * sizeof(WireRange), -1);
    if (!r.ok()) return r.status();
    if (r->err != 0) {
      return ErrnoStatus(r->err, op == kPopulate ? "mapping pages in the alias process"
                                                 : "dropping pages in the alias process");
    }
  }
  return absl::OkStatus();
}

}  // namespace numavm
