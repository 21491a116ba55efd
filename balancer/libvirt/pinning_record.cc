#include "balancer/libvirt/pinning_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/read_file.h"

namespace numavm {
namespace {

constexpr uint64_t kMaxRecordBytes = 1 << 20;  // 1024 vCPUs of 1024-CPU lists fit

std::string DomainsDir(const std::string& runtime_dir) { return runtime_dir + "/domains"; }

// A UUID as libvirt prints it: hex digits and dashes only (it names files).
bool PlausibleUuid(const std::string& uuid) {
  if (uuid.empty() || uuid.size() > 64) return false;
  for (char c : uuid) {
    if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return true;
}

absl::StatusOr<int> OpenLock(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("lock ", path));
  return fd;
}

absl::StatusOr<SavedPinning> ReadRecord(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, "pinning record", kMaxRecordBytes);
  if (!text.ok()) return text.status();
  return SavedPinningFromJson(*text);
}

}  // namespace

std::string SavedPinningToJson(const SavedPinning& p) {
  return nlohmann::json{{"name", p.name},
                        {"uuid", p.uuid},
                        {"pid", p.pid},
                        {"qemu_pid", p.qemu_pid},
                        {"pinning", p.pinning}}
      .dump();
}

absl::StatusOr<SavedPinning> SavedPinningFromJson(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("uuid") || !j["uuid"].is_string() || !j.contains("pinning") ||
      !j["pinning"].is_array()) {
    return absl::InvalidArgumentError("not a pinning record (want uuid and pinning)");
  }
  SavedPinning p;
  p.uuid = j["uuid"].get<std::string>();
  if (j.contains("name") && j["name"].is_string()) p.name = j["name"].get<std::string>();
  if (j.contains("pid") && j["pid"].is_number_integer()) p.pid = j["pid"].get<int>();
  if (j.contains("qemu_pid") && j["qemu_pid"].is_number_integer()) {
    p.qemu_pid = j["qemu_pid"].get<int>();
  }
  for (const nlohmann::json& cpus : j["pinning"]) {
    if (!cpus.is_array()) return absl::InvalidArgumentError("a vCPU's pinning is not a list");
    std::vector<int> list;
    for (const nlohmann::json& c : cpus) {
      if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > 65535) {
        return absl::InvalidArgumentError("a pinned CPU is not a CPU number");
      }
      list.push_back(c.get<int>());
    }
    if (list.empty()) return absl::InvalidArgumentError("a vCPU is pinned to no CPU");
    p.pinning.push_back(std::move(list));
  }
  return p;
}

absl::StatusOr<PinningRecord> PinningRecord::Claim(const std::string& runtime_dir,
                                                   const std::string& uuid,
                                                   const std::string& name) {
  if (!PlausibleUuid(uuid)) {
    return absl::InvalidArgumentError(absl::StrCat("domain '", name, "': odd UUID '", uuid, "'"));
  }
  const std::string dir = DomainsDir(runtime_dir);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("create ", dir));
  }
  absl::StatusOr<int> fd = OpenLock(absl::StrCat(dir, "/", uuid, ".lock"));
  if (!fd.ok()) return fd.status();
  const std::string record = absl::StrCat(dir, "/", uuid, ".json");
  if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(*fd);
    if (err != EWOULDBLOCK) return ErrnoStatus(err, absl::StrCat("lock ", record));
    // The holder wrote its pid into the lock file.
    absl::StatusOr<std::string> holder =
        ReadRegularFile(absl::StrCat(dir, "/", uuid, ".lock"), "lock", 64);
    int pid = 0;
    if (holder.ok() && !absl::SimpleAtoi(absl::StripAsciiWhitespace(*holder), &pid)) pid = 0;
    return absl::FailedPreconditionError(absl::StrCat(
        "domain '", name, "' is already attached by ",
        pid > 0 ? absl::StrCat("numavm pid ", pid) : std::string("another numavm process"),
        " ('numavm detach ", name, "' lets it go)"));
  }
  const std::string me = absl::StrCat(getpid(), "\n");
  if (ftruncate(*fd, 0) != 0 || pwrite(*fd, me.data(), me.size(), 0) < 0) {
    const int err = errno;
    close(*fd);
    return ErrnoStatus(err, absl::StrCat("lock ", record));
  }
  PinningRecord r(*fd, dir, uuid, name);
  if (absl::StatusOr<SavedPinning> left = ReadRecord(record); left.ok() && left->uuid == uuid) {
    r.recovered_ = std::move(*left);
  }
  return r;
}

PinningRecord::PinningRecord(PinningRecord&& other) noexcept
    : fd_(other.fd_),
      dir_(std::move(other.dir_)),
      uuid_(std::move(other.uuid_)),
      name_(std::move(other.name_)),
      recovered_(std::move(other.recovered_)) {
  other.fd_ = -1;
}

PinningRecord::~PinningRecord() {
  if (fd_ >= 0) close(fd_);  // drops the lock
}

absl::Status PinningRecord::Save(const std::vector<std::vector<int>>& pinning, int qemu_pid) {
  const std::string path = absl::StrCat(dir_, "/", uuid_, ".json");
  const std::string temp = absl::StrCat(path, ".", getpid(), ".tmp");
  const std::string text = SavedPinningToJson({name_, uuid_, getpid(), qemu_pid, pinning});
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("write ", temp));
  const bool written =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  if (!written || rename(temp.c_str(), path.c_str()) != 0) {
    const int e = written ? errno : err;
    unlink(temp.c_str());
    return ErrnoStatus(e, absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

void PinningRecord::Forget() {
  if (fd_ >= 0) unlink(absl::StrCat(dir_, "/", uuid_, ".json").c_str());
}

void PinningRecord::Release() {
  if (fd_ < 0) return;
  unlink(absl::StrCat(dir_, "/", uuid_, ".json").c_str());
  close(fd_);
  fd_ = -1;
}

std::vector<SavedPinning> StaleRecords(const std::string& runtime_dir) {
  std::vector<SavedPinning> out;
  const std::string dir = DomainsDir(runtime_dir);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string file = e->d_name;
    if (!absl::EndsWith(file, ".json")) continue;
    const std::string uuid = file.substr(0, file.size() - 5);
    absl::StatusOr<int> fd = OpenLock(absl::StrCat(dir, "/", uuid, ".lock"));
    if (!fd.ok()) continue;
    const bool free = flock(*fd, LOCK_EX | LOCK_NB) == 0;
    close(*fd);
    if (!free) continue;  // its numavm is alive
    absl::StatusOr<SavedPinning> p = ReadRecord(absl::StrCat(dir, "/", file));
    if (p.ok() && p->uuid == uuid) out.push_back(std::move(*p));
  }
  closedir(d);
  return out;
}

absl::Status RemoveStaleRecord(const std::string& runtime_dir, const std::string& uuid) {
  if (!PlausibleUuid(uuid)) return absl::InvalidArgumentError("odd UUID");
  const std::string dir = DomainsDir(runtime_dir);
  absl::StatusOr<int> fd = OpenLock(absl::StrCat(dir, "/", uuid, ".lock"));
  if (!fd.ok()) return fd.status();
  if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    close(*fd);
    return absl::FailedPreconditionError("a numavm process has attached it again");
  }
  unlink(absl::StrCat(dir, "/", uuid, ".json").c_str());
  close(*fd);
  return absl::OkStatus();
}

}  // namespace numavm
