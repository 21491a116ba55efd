#include "vmm/elf_payload.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/numavm_process.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

// A minimal valid payload image: one PT_LOAD segment at the payload base.
std::vector<uint8_t> MinimalElf(uint64_t load_address, uint64_t entry) {
  std::vector<uint8_t> image(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + 16, 0x90);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = entry;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_offset = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
  ph.p_vaddr = ph.p_paddr = load_address;
  ph.p_filesz = 16;
  ph.p_memsz = 4096;
  std::memcpy(image.data(), &eh, sizeof(eh));
  std::memcpy(image.data() + sizeof(eh), &ph, sizeof(ph));
  return image;
}

TEST(ParseElfPayload, AcceptsAMinimalPayload) {
  absl::StatusOr<ElfPayload> p =
      ParseElfPayload("mini", MinimalElf(abi::kPayloadBase, abi::kPayloadBase));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->entry.value, abi::kPayloadBase);
  ASSERT_EQ(p->segments.size(), 1u);
  EXPECT_EQ(p->segments[0].memory_bytes, 4096u);
}

TEST(ParseElfPayload, AcceptsTheBuiltGuestTools) {
  absl::StatusOr<ElfPayload> p = ReadElfPayload(testing::PayloadPath("numa02"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(p->entry.value, abi::kPayloadBase);
}

TEST(ParseElfPayload, RejectsNonElf) {
  std::string text = "#!/bin/sh\necho not a payload\n";
  absl::StatusOr<ElfPayload> p =
      ParseElfPayload("script", std::vector<uint8_t>(text.begin(), text.end()));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "payload script: not an ELF file");
}

TEST(ParseElfPayload, RejectsAnotherArchitecture) {
  std::vector<uint8_t> image = MinimalElf(abi::kPayloadBase, abi::kPayloadBase);
  reinterpret_cast<Elf64_Ehdr*>(image.data())->e_machine = EM_AARCH64;
  absl::StatusOr<ElfPayload> p = ParseElfPayload("arm", image);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "payload arm: an ELF for aarch64, not x86-64");
}

TEST(ParseElfPayload, RejectsSegmentsOutsideThePayloadWindow) {
  absl::StatusOr<ElfPayload> low = ParseElfPayload("low", MinimalElf(0x1000, 0x1000));
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.status().message().find("outside the payload window"), absl::string_view::npos);
  absl::StatusOr<ElfPayload> high =
      ParseElfPayload("high", MinimalElf(abi::kPayloadLimit - 16, abi::kPayloadLimit - 16));
  EXPECT_FALSE(high.ok());
}

TEST(ParseElfPayload, RejectsEntryOutsideSegments) {
  absl::StatusOr<ElfPayload> p =
      ParseElfPayload("wild", MinimalElf(abi::kPayloadBase, abi::kPayloadBase + 0x10000));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("entry point"), absl::string_view::npos);
}

TEST(ParseElfPayload, RejectsTruncatedFiles) {
  std::vector<uint8_t> image = MinimalElf(abi::kPayloadBase, abi::kPayloadBase);
  for (size_t keep : {size_t{4}, size_t{40}, sizeof(Elf64_Ehdr) + 8, image.size() - 8}) {
    std::vector<uint8_t> cut(image.begin(), image.begin() + keep);
    EXPECT_FALSE(ParseElfPayload("cut", cut).ok()) << "kept " << keep << " bytes";
  }
}

TEST(LoadElfPayload, CopiesSegmentsAndZeroesBss) {
  const uint64_t region[] = {16ull << 20};
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(Backing::kAnon, region);
  ASSERT_TRUE(memory.ok()) << memory.status();
  uint8_t* dst = memory->HostPointer(GuestAddress{abi::kPayloadBase}, 4096);
  std::memset(dst, 0xee, 4096);
  absl::StatusOr<ElfPayload> p =
      ParseElfPayload("mini", MinimalElf(abi::kPayloadBase, abi::kPayloadBase));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(LoadElfPayload(*p, *memory).ok());
  EXPECT_EQ(dst[0], 0x90);
  EXPECT_EQ(dst[15], 0x90);
  EXPECT_EQ(dst[16], 0);
  EXPECT_EQ(dst[4095], 0);
}

// Found by fuzz/elf_fuzz.cc: a payload whose only segment is all .bss
// (no file bytes) once passed a null pointer to memcpy.
TEST(ParseElfPayload, ASegmentWithoutFileBytesIsAllBss) {
  std::vector<uint8_t> image = MinimalElf(abi::kPayloadBase, abi::kPayloadBase);
  const uint64_t none = 0;
  std::memcpy(image.data() + sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_filesz), &none,
              sizeof(none));
  absl::StatusOr<ElfPayload> p = ParseElfPayload("bss", image);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->segments.size(), 1u);
  EXPECT_EQ(p->segments[0].file_bytes, 0u);
  EXPECT_TRUE(p->image.empty());
}

}  // namespace
}  // namespace numavm
