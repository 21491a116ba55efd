#include "vmm/elf_payload.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_AARCH64: return "aarch64";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    default: return absl::StrCat("machine ", machine);
  }
}

}  // namespace

absl::StatusOr<ElfPayload> ParseElfPayload(std::string name,
                                           std::vector<uint8_t> image) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload ", name, ": ", why));
  };
  if (image.size() < SELFMAG || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0) {
    return bad("not an ELF file");
  }
  if (image.size() < sizeof(Elf64_Ehdr)) return bad("truncated ELF header");
  if (image[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof(eh));
  if (image[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
    return bad(absl::StrCat("an ELF for ", MachineName(eh.e_machine),
                            ", not x86-64"));
  }
  if (eh.e_type != ET_EXEC) {
    return bad("not a statically linked executable (ET_EXEC)");
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      eh.e_phoff > image.size() ||
      (image.size() - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum) {
    return bad("program headers lie outside the file");
  }
  ElfPayload payload;
  payload.name = std::move(name);
  payload.entry = GuestAddress{eh.e_entry};
  bool entry_loaded = false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, image.data() + eh.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(ph));
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    if (ph.p_filesz > ph.p_memsz || ph.p_offset > image.size() ||
        ph.p_filesz > image.size() - ph.p_offset) {
      return bad(absl::StrCat("segment ", i, " lies outside the file"));
    }
    if (ph.p_paddr < abi::kPayloadBase || ph.p_paddr >= abi::kPayloadLimit ||
        ph.p_memsz > abi::kPayloadLimit - ph.p_paddr) {
      return bad(absl::StrCat("segment ", i, " at 0x", absl::Hex(ph.p_paddr),
                              " (+0x", absl::Hex(ph.p_memsz),
                              ") is outside the payload window 0x",
                              absl::Hex(abi::kPayloadBase), "-0x",
                              absl::Hex(abi::kPayloadLimit)));
    }
    if (eh.e_entry >= ph.p_paddr && eh.e_entry - ph.p_paddr < ph.p_memsz) {
      entry_loaded = true;
    }
    payload.segments.push_back(
        ElfSegment{GuestAddress{ph.p_paddr}, ph.p_offset, ph.p_filesz,
                   ph.p_memsz});
  }
  if (payload.segments.empty()) return bad("no loadable segments");
  if (!entry_loaded) {
    return bad(absl::StrCat("entry point 0x", absl::Hex(eh.e_entry),
                            " is not inside a loadable segment"));
  }
  payload.image = std::move(image);
  return payload;
}

absl::StatusOr<ElfPayload> ReadElfPayload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("payload ", path, ": cannot open file"));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return ParseElfPayload(path, std::move(bytes));
}

absl::Status LoadElfPayload(const ElfPayload& payload, GuestMemory& memory) {
  for (const ElfSegment& s : payload.segments) {
    uint8_t* dst = memory.HostPointer(s.address, s.memory_bytes);
    if (dst == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "payload ", payload.name, ": segment at 0x", absl::Hex(s.address.value),
          " does not fit in guest memory"));
    }
    std::memcpy(dst, payload.image.data() + s.file_offset, s.file_bytes);
    std::memset(dst + s.file_bytes, 0, s.memory_bytes - s.file_bytes);
  }
  return absl::OkStatus();
}

}  // namespace numavm
