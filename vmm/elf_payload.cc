#include "vmm/elf_payload.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_ARM:
      return "arm";
    case EM_AARCH64:
      return "aarch64";
    case EM_RISCV:
      return "riscv";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390";
    default:
      return absl::StrCat("machine ", machine);
  }
}

}  // namespace

namespace {

// Reads `length` bytes at `offset` of the payload file into `out`; the caller
// has checked that they lie inside the file.
using ReadAt = std::function<absl::Status(uint64_t offset, uint64_t length, void* out)>;

// Validates the ELF behind `read` (a file of `file_bytes`) and reads only its
// loadable segments: a payload's cost is bounded by the payload window,
// not by the file (debug sections, a sparse tail).
absl::StatusOr<ElfPayload> Parse(std::string name, uint64_t file_bytes, const ReadAt& read) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("payload ", name, ": ", why));
  };
  unsigned char ident[EI_NIDENT] = {};
  if (file_bytes < SELFMAG) return bad("not an ELF file");
  if (absl::Status s = read(0, std::min<uint64_t>(file_bytes, EI_NIDENT), ident); !s.ok()) return s;
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return bad("not an ELF file");
  if (file_bytes < sizeof(Elf64_Ehdr)) return bad("truncated ELF header");
  if (ident[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF file");
  Elf64_Ehdr eh;
  if (absl::Status s = read(0, sizeof(eh), &eh); !s.ok()) return s;
  if (ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
    return bad(absl::StrCat("an ELF for ", MachineName(eh.e_machine), ", not x86-64"));
  }
  if (eh.e_type != ET_EXEC) {
    return bad("not a statically linked executable (ET_EXEC)");
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phoff > file_bytes ||
      (file_bytes - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum) {
    return bad("program headers lie outside the file");
  }
  std::vector<Elf64_Phdr> headers(eh.e_phnum);
  if (absl::Status s = read(eh.e_phoff, headers.size() * sizeof(Elf64_Phdr), headers.data());
      !s.ok()) {
    return s;
  }
  ElfPayload payload;
  payload.name = name;
  payload.entry = GuestAddress{eh.e_entry};
  bool entry_loaded = false;
  uint64_t image_bytes = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    const Elf64_Phdr& ph = headers[i];
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    if (ph.p_filesz > ph.p_memsz || ph.p_offset > file_bytes ||
        ph.p_filesz > file_bytes - ph.p_offset) {
      return bad(absl::StrCat("segment ", i, " lies outside the file"));
    }
    if (ph.p_paddr < abi::kPayloadBase || ph.p_paddr >= abi::kPayloadLimit ||
        ph.p_memsz > abi::kPayloadLimit - ph.p_paddr) {
      return bad(absl::StrCat("segment ", i, " at 0x", absl::Hex(ph.p_paddr), " (+0x",
                              absl::Hex(ph.p_memsz), ") is outside the payload window 0x",
                              absl::Hex(abi::kPayloadBase), "-0x", absl::Hex(abi::kPayloadLimit)));
    }
    // Segments that fit the window one after another never add up past it.
    image_bytes += ph.p_filesz;
    if (image_bytes > abi::kPayloadLimit - abi::kPayloadBase) {
      return bad("loadable segments overlap (more file bytes than the payload window holds)");
    }
    if (eh.e_entry >= ph.p_paddr && eh.e_entry - ph.p_paddr < ph.p_memsz) entry_loaded = true;
    // file_offset: where the segment's bytes are in payload.image.
    payload.segments.push_back(
        ElfSegment{GuestAddress{ph.p_paddr}, image_bytes - ph.p_filesz, ph.p_filesz, ph.p_memsz});
  }
  if (payload.segments.empty()) return bad("no loadable segments");
  if (!entry_loaded) {
    return bad(
        absl::StrCat("entry point 0x", absl::Hex(eh.e_entry), " is not inside a loadable segment"));
  }
  payload.image.resize(image_bytes);
  size_t k = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    const Elf64_Phdr& ph = headers[i];
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    const ElfSegment& seg = payload.segments[k++];
    if (ph.p_filesz == 0) continue;  // all .bss
    if (absl::Status s = read(ph.p_offset, ph.p_filesz, payload.image.data() + seg.file_offset);
        !s.ok()) {
      return s;
    }
  }
  return payload;
}

}  // namespace

absl::StatusOr<ElfPayload> ParseElfPayload(std::string name, std::vector<uint8_t> image) {
  return Parse(std::move(name), image.size(), [&](uint64_t offset, uint64_t length, void* out) {
    if (length > 0) std::memcpy(out, image.data() + offset, length);
    return absl::OkStatus();
  });
}

absl::StatusOr<ElfPayload> ReadElfPayload(const std::string& path) {
  // Any size: only the headers and the loadable segments are read.
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, "payload", ~0ull);
  if (!file.ok()) return file.status();
  return Parse(path, file->size(), [&](uint64_t offset, uint64_t length, void* out) {
    return file->ReadAt(offset, length, out);
  });
}

absl::Status LoadElfPayload(const ElfPayload& payload, GuestMemory& memory) {
  for (const ElfSegment& s : payload.segments) {
    uint8_t* dst = memory.HostPointer(s.address, s.memory_bytes);
    if (dst == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("payload ", payload.name, ": segment at 0x",
                                                     absl::Hex(s.address.value),
                                                     " does not fit in guest memory"));
    }
    std::memcpy(dst, payload.image.data() + s.file_offset, s.file_bytes);
    std::memset(dst + s.file_bytes, 0, s.memory_bytes - s.file_bytes);
  }
  return absl::OkStatus();
}

}  // namespace numavm
