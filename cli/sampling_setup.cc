#include "cli/sampling_setup.h"

#include "absl/strings/str_cat.h"
#include "balancer/policy/scan_gate.h"
#include "balancer/sampling/blocked_vcpu.h"
#include "balancer/sampling/dirty_log_sampler.h"
#include "balancer/sampling/dirty_ring_sampler.h"
#include "balancer/sampling/hint_fault_sampler.h"
#include "balancer/sampling/prot_none_sampler.h"
#include "base/size.h"
#include "vmm/fault_probe.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

bool SharedFile(Backing b) { return b == Backing::kMemfd || b == Backing::kHugetlb; }

// The guest's heap: what the hinting-fault samplers cover. Below it are
// the VMM's page tables, boot info and mailboxes and the payload image,
// which every vCPU touches all the time (and KVM's instruction emulator
// and the VMM's own code read). Probing those would stall every vCPU on
// its own page tables, and their samples say nothing about where the
// workload's memory belongs (they would link every vCPU into one group).
std::vector<GuestRamRegion> HeapOf(const std::vector<GuestRamRegion>& ram) {
  std::vector<GuestRamRegion> heap;
  for (GuestRamRegion r : ram) {
    if (r.gpa + r.bytes <= abi::kHeapStart) continue;
    if (r.gpa < abi::kHeapStart) {
      const uint64_t skip = abi::kHeapStart - r.gpa;
      r.gpa += skip;
      r.host += skip;
      r.file_offset += skip;
      r.bytes -= skip;
    }
    heap.push_back(r);
  }
  return heap.empty() ? ram : heap;
}

}  // namespace

absl::StatusOr<std::string> PrepareSampling(RunOptions& options) {
  std::string note;
  SamplingOptions& s = options.sampling;
  if (s.sampler == SamplerKind::kHint && !SharedFile(options.vm.backing)) {
    if (s.sampler_chosen) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sampler=hint needs --backing=memfd or hugetlb (", BackingName(options.vm.backing),
          " memory has no page cache for userfaultfd minor faults); use --sampler=evict, wp, "
          "ring, dirtylog or off"));
    }
    // anon: evict hinting faults - the probes saved and freed, their next
    // access a missing fault - which see reads and writes with the vCPU
    // that made them, as the kernel's balancing sees them, on any kernel.
    // thp (evicting part of a huge page would split it): PROT_NONE
    // hinting faults where KVM names the faulting page
    // (vmm/fault_probe.h), else write-protect hinting faults, writes
    // only. Linux guests: write-protect (evict and prot are for payload
    // guests for now). Each at a cost the stall budget bounds (the dirty
    // ring would make every first write to any page a fault).
    const std::string why =
        absl::StrCat("sampler: minor hinting faults need memfd or hugetlb backing; --backing=",
                     BackingName(options.vm.backing), " uses ");
    if (options.kernel.empty() && options.vm.backing == Backing::kAnon) {
      s.sampler = SamplerKind::kEvict;
      note = absl::StrCat(why,
                          "evict hinting faults (evict), which see reads and writes: each probe "
                          "is saved and freed, and its next access brings it back");
    } else if (options.kernel.empty() && KvmNamesFaultingPages()) {
      s.sampler = SamplerKind::kProtNone;
      note = absl::StrCat(why,
                          "PROT_NONE hinting faults (prot), which see reads and writes (not told "
                          "apart)");
    } else {
      s.sampler = SamplerKind::kWriteProtect;
      note = absl::StrCat(why,
                          "write-protect hinting faults (wp), which see writes only (reads are "
                          "not seen: a region only read is not balanced",
                          options.kernel.empty()
                              ? "; this KVM does not name the page of a PROT_NONE fault)"
                              : "; evict and PROT_NONE faults are not for Linux guests yet)");
    }
  }
  if (s.sampler == SamplerKind::kProtNone && !options.kernel.empty()) {
    return absl::InvalidArgumentError(
        "--sampler=prot is not for Linux guests (--kernel): any of their pages may be one KVM's "
        "instruction emulator reads; use --sampler=hint, wp or ring");
  }
  if (s.sampler == SamplerKind::kEvict && !options.kernel.empty()) {
    return absl::InvalidArgumentError(
        "--sampler=evict is not for Linux guests (--kernel) yet: it is tested with payload "
        "guests only; use --sampler=hint, wp or ring");
  }
  if (s.sampler == SamplerKind::kEvict && options.vm.backing != Backing::kAnon) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sampler=evict needs --backing=anon (", BackingName(options.vm.backing),
        " memory: use --sampler=", SharedFile(options.vm.backing) ? "hint" : "wp", ")"));
  }
  if (s.sampler == SamplerKind::kWriteProtect && SharedFile(options.vm.backing)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sampler=wp needs --backing=anon or thp (", BackingName(options.vm.backing),
                     " memory: use --sampler=hint, which sees reads too)"));
  }
  if (!s.sampler_chosen && s.sampler != SamplerKind::kOff && options.record_path.empty() &&
      !WorthScanning(options.vm.memory_bytes)) {
    s.sampler = SamplerKind::kOff;
    note =
        absl::StrCat("sampler: off for a VM under ", FormatSize(ScanGateConfig{}.min_guest_bytes),
                     " (nothing worth balancing); --sampler turns it on");
  }
  if (s.sampler == SamplerKind::kRing) options.vm.dirty_ring_entries = s.ring_entries;
  return note;
}

ScanConfig ScanConfigOf(const RunOptions& options) {
  // While balancing, the scan period adapts (policy/scan_period.h); only
  // measuring keeps it fixed.
  ScanConfig c;
  c.window_bytes = options.sampling.window_bytes;
  c.period = options.sampling.period;
  c.period_max = options.sampling.period_max;
  c.adaptive = options.balance.mode != BalanceMode::kOff;
  c.rate = options.sampling.rate;
  c.vcpus = options.vm.vcpus;
  return c;
}

std::vector<GuestRamRegion> GuestRamOf(const VirtualMachine& vm) {
  std::vector<GuestRamRegion> ram;
  const Backing backing = vm.memory().backing();
  const auto& regions = vm.memory().regions();
  for (size_t i = 0; i < regions.size(); ++i) {
    GuestRamRegion r;
    r.slot = static_cast<uint32_t>(i);
    r.gpa = regions[i].start.value;
    r.bytes = regions[i].bytes;
    r.host = regions[i].host();
    // 2 MiB for hugetlb and transparent hugepages: a probe is then a whole
    // huge page. Changing the protection of part of a transparent huge
    // page splits its mapping into 4 KiB entries for good (the guest loses
    // its 2 MiB translations there), where the whole of it keeps it huge.
    r.page_bytes = BackingAlignment(backing);
    r.shared_file = SharedFile(backing);
    r.fd = regions[i].backing.fd.get();
    ram.push_back(r);
  }
  return ram;
}

absl::StatusOr<std::unique_ptr<AccessSampler>> CreateSampler(const SamplingOptions& options,
                                                             VirtualMachine& vm) {
  auto clock = [&vm] { return vm.Elapsed(); };
  const int vcpus = vm.config().vcpus;
  switch (options.sampler) {
    case SamplerKind::kOff:
      return std::unique_ptr<AccessSampler>();
    case SamplerKind::kHint:
    case SamplerKind::kWriteProtect:
    case SamplerKind::kEvict: {
      auto vcpu_of = [&vm](pid_t tid) {
        std::vector<pid_t> tids = vm.VcpuThreadIds();
        for (size_t i = 0; i < tids.size(); ++i) {
          if (tids[i] == tid) return static_cast<int>(i);
        }
        return -1;
      };
      const HintFaults kind = options.sampler == SamplerKind::kHint    ? HintFaults::kMinor
                              : options.sampler == SamplerKind::kEvict ? HintFaults::kEvict
                                                                       : HintFaults::kWriteProtect;
      auto s = HintFaultSampler::Create(HeapOf(GuestRamOf(vm)), vcpus, vcpu_of, clock, kind);
      if (!s.ok()) return s.status();
      // With KVM's in-kernel local APIC (Linux guests) vCPU faults can come
      // from KVM's async-page-fault workers.
      if (vm.has_irqchip()) {
        // Each cell's pages (cells lie in order from guest-physical 0) and
        // its vCPUs (blocked_vcpu.h).
        std::vector<CellVcpus> cells;
        uint64_t end = 0;
        for (const CellConfig& c : vm.config().cells) {
          end += c.memory_bytes / kGuestPageBytes;
          cells.push_back({end, c.vcpus});
        }
        auto owner = std::make_shared<WorkerFaultOwner>(std::move(cells));
        (*s)->set_blocked_vcpu(
            [&vm, owner](uint64_t gfn) { return owner->Of(gfn, vm.VcpuThreadIds()); });
      }
      return std::unique_ptr<AccessSampler>(*std::move(s));
    }
    case SamplerKind::kProtNone: {
      if (vm.has_irqchip()) {
        return absl::FailedPreconditionError(
            "--sampler=prot is not for Linux guests: any of their pages may be one KVM's "
            "instruction emulator reads (use --sampler=hint, wp or ring)");
      }
      if (!KvmNamesFaultingPages()) {
        return absl::FailedPreconditionError(
            "--sampler=prot needs a kernel whose KVM names the page of an access it could not "
            "make (KVM_EXIT_MEMORY_FAULT for every such EFAULT: newer than Linux 6.12); use "
            "--sampler=hint or wp");
      }
      auto s = ProtNoneSampler::Create(HeapOf(GuestRamOf(vm)), vcpus, clock, &vm.move_fence(),
                                       ProbeProtNoneFaults().exit_round_trip);
      if (!s.ok()) return s.status();
      ProtNoneSampler* prot = s->get();
      vm.SetMemoryFaultHandler(
          [prot](int vcpu, std::optional<uint64_t> gpa) { return prot->OnFault(vcpu, gpa); });
      // Destroyed: the vCPUs no longer ask it (the VM waits for any asking).
      prot->set_detach([&vm] { vm.SetMemoryFaultHandler(nullptr); });
      return std::unique_ptr<AccessSampler>(*std::move(s));
    }
    case SamplerKind::kDirtyLog: {
      auto s = DirtyLogSampler::Create(vm.vm_fd(), GuestRamOf(vm), vcpus, clock);
      if (!s.ok()) return s.status();
      return std::unique_ptr<AccessSampler>(*std::move(s));
    }
    case SamplerKind::kRing: {
      std::vector<DirtyRingView> rings;
      for (const auto& r : vm.DirtyRings()) {
        rings.push_back(DirtyRingView{static_cast<kvm_dirty_gfn*>(r.entries), r.count});
      }
      if (rings.empty()) {
        return absl::FailedPreconditionError("--sampler=ring: the VM has no dirty rings");
      }
      auto s = DirtyRingSampler::Create(vm.vm_fd(), GuestRamOf(vm), rings, clock);
      if (!s.ok()) return s.status();
      DirtyRingSampler* ring = s->get();
      vm.SetDirtyRingFullHandler([ring](int vcpu) { ring->OnRingFull(vcpu); });
      return std::unique_ptr<AccessSampler>(*std::move(s));
    }
  }
  return absl::InvalidArgumentError("bad sampler");
}

}  // namespace numavm
