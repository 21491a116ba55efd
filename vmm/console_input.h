// A Linux guest's console input: what is typed on numavm's terminal goes to
// COM1 (serial_16550.h), so the guest's shell can be used. Only a terminal
// is read (a pipe or file on stdin stays untouched). While it runs, the
// terminal is in non-canonical mode without echo - the guest echoes and
// edits lines - but keeps its signals, so Ctrl-C still stops numavm
// (exit 130); its settings are restored when the input stops.
#ifndef NUMAVM_VMM_CONSOLE_INPUT_H_
#define NUMAVM_VMM_CONSOLE_INPUT_H_

#include <termios.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"

namespace numavm {

class ConsoleInput final {
 public:
  using Sink = std::function<void(const char* data, size_t size)>;

  // Starts reading terminal `fd` into `sink` on a thread of its own; an
  // error if `fd` is not a terminal.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ConsoleInput>> Start(int fd, Sink sink);
  ~ConsoleInput();  // stops reading and restores the terminal

  ConsoleInput(const ConsoleInput&) = delete;
  ConsoleInput& operator=(const ConsoleInput&) = delete;

 private:
  ConsoleInput(int fd, Sink sink, const termios& saved, int stop_fd);
  void Loop();

  const int fd_;
  const Sink sink_;
  const termios saved_;
  const int stop_fd_;
  std::thread reader_;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_CONSOLE_INPUT_H_
