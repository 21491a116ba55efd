// Control sockets: every numavm process that balances VMs (`numavm run`,
// `attach`, `daemon`) listens on a Unix socket (mode 0600) in the runtime
// directory (runtime_dir.h); `numavm report` and `numavm detach` talk to them
// (control_client.h). One request line per connection, one reply, then
// close. The server reads up to kMaxPendingClients requests at once, each
// within kRequestTimeout, so that idle clients cannot hide a VM from others.
#ifndef NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_
#define NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/control/runtime_dir.h"

namespace numavm {

class ControlServer {
 public:
  static constexpr int kMaxPendingClients = 256;  // more: the oldest is dropped
  static constexpr absl::Duration kRequestTimeout = absl::Seconds(1);
  static constexpr size_t kMaxRequestBytes = 4096;

  using Handler = std::function<std::string(const std::string& request)>;

  // Listens on `dir`/`name`.sock (creating `dir` with mode 0700 if needed;
  // a runtime dir that is not the user's own is refused, runtime_dir.h). A
  // stale socket of that name is replaced; any other file is an error.
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
absl::StatusOr<std::string> ControlRequest(const std::string& socket_path,
                                           const std::string& request,
                                           absl::Duration timeout = absl::Seconds(5));

// The sockets named *.sock in `dir` (lstat: no symlinks, no other files);
// none when `dir` does not exist; an error when it is not the user's own.
absl::StatusOr<std::vector<std::string>> ListControlSockets(const std::string& dir);

// Unlinks `path` only if it is a socket (lstat); true if it did.
bool UnlinkStaleSocket(const std::string& path);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_CONTROL_CONTROL_SOCKET_H_
