#include "cli/payload_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/read_file.h"

namespace numavm {
namespace fs = std::filesystem;

std::vector<std::string> PayloadSearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("NUMAVM_PAYLOAD_DIR"); env && *env) {
    dirs.push_back(env);
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back((self.parent_path() / "guest-tools").string());
    dirs.push_back((self.parent_path() / ".." / "lib" / "numavm" / "guest-tools").string());
  }
  return dirs;
}

std::vector<std::string> AvailablePayloads() {
  std::set<std::string> names;
  for (const std::string& dir : PayloadSearchPath()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string file = entry.path().filename().string();
      if (absl::EndsWith(file, ".elf") && !absl::StartsWith(file, "hostile_") &&
          !absl::StartsWith(file, "probe_")) {
        names.insert(file.substr(0, file.size() - 4));
      }
    }
  }
  return {names.begin(), names.end()};
}

absl::StatusOr<std::string> ResolvePayload(const std::string& spec) {
  if (spec.empty()) return absl::InvalidArgumentError("--payload is empty");
  if (absl::StrContains(spec, '/') || absl::EndsWith(spec, ".elf")) {
    // Opening it says what is wrong: missing, unreadable, not a regular file.
    absl::StatusOr<RegularFile> file = RegularFile::Open(spec, "payload", ~0ull);
    if (!file.ok()) return file.status();
    return spec;
  }
  for (const std::string& dir : PayloadSearchPath()) {
    fs::path candidate = fs::path(dir) / (spec + ".elf");
    if (fs::is_regular_file(candidate)) return candidate.string();
  }
  std::vector<std::string> known = AvailablePayloads();
  return absl::NotFoundError(absl::StrCat(
      "payload '", spec, "' not found",
      known.empty() ? std::string(" (no guest-tools payloads installed; set NUMAVM_PAYLOAD_DIR)")
                    : absl::StrCat("; available: ", absl::StrJoin(known, ", "))));
}

}  // namespace numavm
