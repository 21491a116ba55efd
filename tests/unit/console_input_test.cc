// Console input on a real pseudo-terminal: what is typed reaches the sink
// byte for byte, the terminal is non-canonical without echo meanwhile and
// restored afterwards; a non-terminal is refused.
#include "vmm/console_input.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace numavm {
namespace {

TEST(ConsoleInput, TypedBytesReachTheGuestAndTheTerminalIsRestored) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  termios before{};
  ASSERT_EQ(::tcgetattr(slave, &before), 0);
  ASSERT_NE(before.c_lflag & ICANON, 0u) << "a pty starts canonical";
  std::mutex mu;
  std::string got;
  {
    auto input = ConsoleInput::Start(slave, [&](const char* d, size_t n) {
      std::lock_guard<std::mutex> lock(mu);
      got.append(d, n);
    });
    ASSERT_TRUE(input.ok()) << input.status();
    termios during{};
    ASSERT_EQ(::tcgetattr(slave, &during), 0);
    EXPECT_EQ(during.c_lflag & (ICANON | ECHO), 0u);
    EXPECT_NE(during.c_lflag & ISIG, 0u) << "Ctrl-C still stops numavm";
    // No newline: non-canonical input is delivered as typed.
    ASSERT_EQ(::write(master, "uname -a", 8), 8);
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (got.size() >= 8) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_EQ(got, "uname -a");
  termios after{};
  ASSERT_EQ(::tcgetattr(slave, &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag) << "restored";
  ::close(master);
  ::close(slave);
}

TEST(ConsoleInput, ANonTerminalIsRefused) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto input = ConsoleInput::Start(fds[0], [](const char*, size_t) {});
  EXPECT_FALSE(input.ok());
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace numavm
