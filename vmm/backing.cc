#include "vmm/backing.h"

#include <linux/memfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "vmm/host_memory.h"
#include "vmm/status.h"

namespace numavm {
namespace {

constexpr uint64_t kHugePageBytes = 2ull << 20;

absl::StatusOr<BackedMapping> CreateMemfd(uint64_t bytes, const std::string& name, unsigned flags) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | flags));
  if (!fd.valid()) return ErrnoStatus(errno, "memfd_create " + name);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return ErrnoStatus(errno, absl::StrCat("ftruncate ", name, " to ", bytes));
  }
  absl::StatusOr<Mapping> m =
      Mapping::Map(bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0, "mmap guest memory");
  if (!m.ok()) return m.status();
  return BackedMapping{std::move(fd), *std::move(m)};
}

absl::StatusOr<BackedMapping> CreateHugetlb(uint64_t bytes, const std::string& name) {
  uint64_t needed = bytes / kHugePageBytes;
  absl::StatusOr<HostMemoryInfo> info = ReadHostMemoryInfo();
  if (info.ok() && info->huge_pages_free < needed) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "--backing=hugetlb needs ", needed, " free 2 MiB huge pages, but ", info->huge_pages_free,
        " are free (", info->huge_pages_total, " reserved); reserve them with: echo ", needed,
        " > /proc/sys/vm/nr_hugepages"));
  }
  absl::StatusOr<BackedMapping> m = CreateMemfd(bytes, name, MFD_HUGETLB | MFD_HUGE_2MB);
  if (!m.ok() && absl::IsResourceExhausted(m.status())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("--backing=hugetlb: the kernel could not reserve ", needed, " huge pages (",
                     m.status().message(), ")"));
  }
  return m;
}

absl::StatusOr<BackedMapping> CreateAnonymous(uint64_t bytes, bool thp) {
  absl::StatusOr<Mapping> m =
      Mapping::Map(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                   0, "mmap guest memory");
  if (!m.ok()) return m.status();
  if (::madvise(m->data(), bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
    return ErrnoStatus(errno, thp ? "madvise(MADV_HUGEPAGE)" : "madvise(MADV_NOHUGEPAGE)");
  }
  return BackedMapping{UniqueFd(), *std::move(m)};
}

}  // namespace

absl::StatusOr<Backing> ParseBacking(absl::string_view name) {
  if (name == "memfd") return Backing::kMemfd;
  if (name == "anon") return Backing::kAnon;
  if (name == "hugetlb") return Backing::kHugetlb;
  if (name == "thp") return Backing::kThp;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backing '", name, "' (expected memfd, anon, hugetlb or thp)"));
}

absl::string_view BackingName(Backing backing) {
  switch (backing) {
    case Backing::kMemfd:
      return "memfd";
    case Backing::kAnon:
      return "anon";
    case Backing::kHugetlb:
      return "hugetlb";
    case Backing::kThp:
      return "thp";
  }
  return "?";
}

uint64_t BackingAlignment(Backing backing) {
  return backing == Backing::kHugetlb || backing == Backing::kThp ? kHugePageBytes : 4096;
}

absl::StatusOr<BackedMapping> CreateBacking(Backing backing, uint64_t bytes,
                                            const std::string& name) {
  switch (backing) {
    case Backing::kMemfd:
      return CreateMemfd(bytes, name, 0);
    case Backing::kHugetlb:
      return CreateHugetlb(bytes, name);
    case Backing::kAnon:
      return CreateAnonymous(bytes, /*thp=*/false);
    case Backing::kThp:
      return CreateAnonymous(bytes, /*thp=*/true);
  }
  return absl::InvalidArgumentError("bad backing");
}

}  // namespace numavm
