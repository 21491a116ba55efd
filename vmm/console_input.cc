#include "vmm/console_input.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "base/errno_status.h"

namespace numavm {

absl::StatusOr<std::unique_ptr<ConsoleInput>> ConsoleInput::Start(int fd, Sink sink) {
  termios saved{};
  if (::tcgetattr(fd, &saved) != 0) return ErrnoStatus(errno, "console input: not a terminal");
  const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) return ErrnoStatus(errno, "console input: eventfd");
  termios raw = saved;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ECHONL);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(fd, TCSANOW, &raw) != 0) {
    const int err = errno;
    ::close(stop_fd);
    return ErrnoStatus(err, "console input: tcsetattr");
  }
  return std::unique_ptr<ConsoleInput>(new ConsoleInput(fd, std::move(sink), saved, stop_fd));
}

ConsoleInput::ConsoleInput(int fd, Sink sink, const termios& saved, int stop_fd)
    : fd_(fd), sink_(std::move(sink)), saved_(saved), stop_fd_(stop_fd) {
  reader_ = std::thread([this] { Loop(); });
}

ConsoleInput::~ConsoleInput() {
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof(one));
  reader_.join();
  ::close(stop_fd_);
  ::tcsetattr(fd_, TCSANOW, &saved_);
}

void ConsoleInput::Loop() {
  char buffer[256];
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & (POLLERR | POLLNVAL)) != 0) return;
    const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
    if (n > 0) {
      sink_(buffer, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      return;  // the terminal hung up: the guest reads nothing more
    }
  }
}

}  // namespace numavm
