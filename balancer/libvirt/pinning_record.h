// The vCPU pinning numavm must put back, kept on disk while a domain is
// attached, and the lock that lets only one numavm process attach a domain.
//
// In the runtime directory, per domain UUID: `domains/UUID.lock` (held with
// flock(LOCK_EX) by the attaching process for as long as it balances the
// domain; the kernel drops it when the process dies, kill -9 included) and
// `domains/UUID.json` (the domain's name, the owner's pid and the pinning
// found before numavm first pinned it). A record whose lock is free was
// left by a numavm that died: the next attach takes its pinning as the
// original (not numavm's own pinning, still in place), and `numavm detach`
// can put it back with no numavm running.
#ifndef NUMAVM_BALANCER_LIBVIRT_PINNING_RECORD_H_
#define NUMAVM_BALANCER_LIBVIRT_PINNING_RECORD_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace numavm {

struct SavedPinning {
  std::string name;  // the domain's name when it was recorded
  std::string uuid;
  int pid = 0;                            // the numavm process that recorded it
  int qemu_pid = 0;                       // the domain's QEMU then: another one means it restarted
  std::vector<std::vector<int>> pinning;  // per vCPU, host CPUs
};

class PinningRecord {
 public:
  // Takes the domain's lock. FailedPrecondition "domain 'NAME' is already
  // attached by numavm pid N" if another live process holds it; other
  // errors name the file. `recovered()` is the record a dead numavm left.
  static absl::StatusOr<PinningRecord> Claim(const std::string& runtime_dir,
                                             const std::string& uuid, const std::string& name);
  PinningRecord(PinningRecord&& other) noexcept;
  PinningRecord& operator=(PinningRecord&&) = delete;
  ~PinningRecord();  // unlocks; the record stays unless Release()d

  const std::optional<SavedPinning>& recovered() const { return recovered_; }
  // Writes the record (atomically: a temporary file renamed over it).
  absl::Status Save(const std::vector<std::vector<int>>& pinning, int qemu_pid);
  // The pinning is back: removes the record, then unlocks.
  void Release();
  // The pinning is back but the domain stays attached: removes the record,
  // keeps the lock.
  void Forget();

 private:
  PinningRecord(int fd, std::string dir, std::string uuid, std::string name)
      : fd_(fd), dir_(std::move(dir)), uuid_(std::move(uuid)), name_(std::move(name)) {}
  int fd_ = -1;
  std::string dir_;  // runtime_dir/domains
  std::string uuid_, name_;
  std::optional<SavedPinning> recovered_;
};

// Records left by numavm processes that are gone (their lock is free), for
// `numavm detach` with no numavm running. Unreadable records are skipped.
std::vector<SavedPinning> StaleRecords(const std::string& runtime_dir);
// Removes a stale record once its pinning is restored (FailedPrecondition
// if a live process has locked it meanwhile).
absl::Status RemoveStaleRecord(const std::string& runtime_dir, const std::string& uuid);

// The record's JSON text and back (InvalidArgument naming what is wrong).
std::string SavedPinningToJson(const SavedPinning& p);
absl::StatusOr<SavedPinning> SavedPinningFromJson(const std::string& text);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_PINNING_RECORD_H_
