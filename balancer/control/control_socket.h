// Control sockets: every numavm process that balances VMs (`numavm run`,
// `attach`, `daemon`) listens on a Unix socket (mode 0600) in the runtime
// directory; `numavm report` and `numavm detach` talk to them. One request
// line per connection, one reply, then close.
#ifndef NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_
#define NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace numavm {

// $NUMAVM_RUNTIME_DIR, else /run/numavm for root, else
// $XDG_RUNTIME_DIR/numavm, else /tmp/numavm-UID.
std::string RuntimeDir();

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;

  // Listens on `dir`/`name`.sock (creating `dir` with mode 0700 if needed).
  static absl::StatusOr<std::unique_ptr<ControlServer>> Start(const std::string& dir,
                                                              const std::string& name,
                                                              Handler handler);
  ~ControlServer();
  const std::string& path() const { return path_; }

 private:
  ControlServer(int fd, std::string path, Handler handler);
  void Serve();

  const int fd_;
  const std::string path_;
  const Handler handler_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Sends `request`, returns the reply.
absl::StatusOr<std::string> ControlRequest(const std::string& socket_path, const std::string& request,
                                           absl::Duration timeout = absl::Seconds(5));

// The *.sock files in `dir`.
std::vector<std::string> ListControlSockets(const std::string& dir);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_
