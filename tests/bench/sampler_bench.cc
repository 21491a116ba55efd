// Access-sampler figures on this machine:
//   - hinting-fault round trip (median, p99), a host thread touching armed
//     pages of a memfd (the userfaultfd path without KVM);
//   - dirty-ring harvest cost per entry, dirty-log arm+harvest cost per GiB;
//   - guest throughput of numa02 and numa02_read with each sampler at its
//     default setting divided by throughput with tracking off, same run.
//
//   build/tests/bench/sampler_bench [seconds-per-run [window-MiB]]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "balancer/host_placement_view.h"
#include "balancer/sampling/dirty_log_sampler.h"
#include "balancer/sampling/dirty_ring_sampler.h"
#include "balancer/sampling/hint_fault_sampler.h"
#include "balancer/sampling/sampling_loop.h"
#include "balancer/vm_balancer.h"
#include "cli/sampling_setup.h"
#include "vmm/elf_payload.h"
#include "vmm/virtual_machine.h"

namespace numavm {
namespace {

void Die(const absl::Status& s) {
  std::fprintf(stderr, "sampler_bench: %s\n", std::string(s.message()).c_str());
  std::exit(1);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

void HintRoundTrip() {
  constexpr uint64_t kBytes = 64ull << 20;
  int fd = memfd_create("bench", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, kBytes) != 0) Die(absl::InternalError("memfd"));
  auto* mem =
      static_cast<uint8_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  for (uint64_t off = 0; off < kBytes; off += 4096) mem[off] = 1;  // populate
  GuestRamRegion r{0, 0, kBytes, mem, 4096, true};
  auto start = std::chrono::steady_clock::now();
  auto clock = [start] { return absl::FromChrono(std::chrono::steady_clock::now() - start); };
  auto sampler = HintFaultSampler::Create({r}, 1, nullptr, clock);
  if (!sampler.ok()) Die(sampler.status());
  if (absl::Status s = (*sampler)->Start(); !s.ok()) Die(s);
  if (absl::Status s = (*sampler)->Arm(ScanPlan{(*sampler)->Coverage(), (*sampler)->Coverage()});
      !s.ok())
    Die(s);
  std::vector<double> micros;
  volatile uint64_t sink = 0;
  for (int round = 0; round < 4; ++round) {
    for (uint64_t off = 0; off < kBytes; off += 4096) {
      auto t0 = std::chrono::steady_clock::now();
      sink = sink + mem[off];
      micros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    AccessBatch batch;
    if (absl::Status s = (*sampler)->Collect(batch); !s.ok()) Die(s);
    if (absl::Status s = (*sampler)->Arm(ScanPlan{(*sampler)->Coverage(), (*sampler)->Coverage()});
        !s.ok())
      Die(s);
  }
  std::vector<absl::Duration> service = (*sampler)->TakeServiceTimes();
  std::vector<double> service_us;
  for (absl::Duration d : service) service_us.push_back(absl::ToDoubleMicroseconds(d));
  (*sampler)->Stop();
  std::printf(
      "hint fault round trip (host thread, %zu faults): median %.1f us, p99 %.1f us; "
      "handler share median %.1f us\n",
      micros.size(), Percentile(micros, 0.5), Percentile(micros, 0.99),
      Percentile(service_us, 0.5));
  munmap(mem, kBytes);
  close(fd);
}

struct VmRun {
  double bytes_per_second = 0;  // all vCPUs, steady state
  SamplerStats stats;
  absl::Duration sampler_cpu;
  double ring_ns_per_entry = 0;
  double dirtylog_ms_per_gib = 0;
};

VmRun RunVm(const std::string& payload, SamplerKind kind, int seconds, uint64_t memory,
            uint64_t window_bytes, BalanceMode balance = BalanceMode::kOff,
            Backing backing = Backing::kMemfd) {
  RunOptions options;
  options.vm.backing = backing;
  options.vm.vcpus = 2;
  options.vm.memory_bytes = memory;
  options.vm.echo_console = false;
  options.vm.payload_args = absl::StrCat("size=64M seconds=", seconds);
  options.sampling.sampler = kind;
  options.sampling.sampler_chosen = true;
  if (window_bytes != 0) options.sampling.window_bytes = window_bytes;
  if (absl::StatusOr<std::string> n = PrepareSampling(options); !n.ok()) Die(n.status());
  if (absl::Status s = NormalizeVmConfig(options.vm); !s.ok()) Die(s);
  absl::StatusOr<ElfPayload> elf =
      ReadElfPayload(absl::StrCat(NUMAVM_PAYLOAD_DIR, "/", payload, ".elf"));
  if (!elf.ok()) Die(elf.status());
  auto vm = VirtualMachine::Create(options.vm, *elf, nullptr);
  if (!vm.ok()) Die(vm.status());
  auto sampler = CreateSampler(options.sampling, **vm);
  if (!sampler.ok()) Die(sampler.status());
  VmRun result;
  absl::StatusOr<Topology> topology = ReadHostTopology();
  if (!topology.ok()) Die(topology.status());
  RateLimiter limiter(256ull << 20, 256ull << 20, absl::ZeroDuration());
  HostPlacementView view(
      *topology, GuestRamOf(**vm), [&vm] { return (*vm)->VcpuThreadIds(); }, &limiter);
  VmBalancer balancer(balance, *topology, options.vm.vcpus, (*vm)->memory().total_bytes() / 4096,
                      view);
  SamplingLoop::Consumer consumer;
  if (balance == BalanceMode::kOn) {
    consumer = [&](const AccessBatch& b) {
      absl::StatusOr<PeriodOutcome> o = balancer.OnBatch(b, (*vm)->Elapsed());
      return o.ok() ? *o : PeriodOutcome{};
    };
  }
  std::unique_ptr<SamplingLoop> loop;
  if (*sampler) {
    loop = std::make_unique<SamplingLoop>(**sampler, ScanConfigOf(options), consumer);
    if (absl::Status s = loop->Start(); !s.ok()) Die(s);
  }
  RunOutcome o = (*vm)->Run();
  if (o.end != RunEnd::kCompleted) Die(absl::InternalError(o.message));
  if (loop) {
    loop->Stop();
    result.stats = (*sampler)->stats();
    result.sampler_cpu = loop->cpu_time() + result.stats.helper_cpu_time;
    if (auto* ring = dynamic_cast<DirtyRingSampler*>(sampler->get())) {
      uint64_t n = ring->entries_harvested();
      result.ring_ns_per_entry = n ? absl::ToDoubleNanoseconds(ring->harvest_time()) / n : 0;
    }
  }
  for (const VcpuRecord& v : o.record.vcpus) result.bytes_per_second += v.BytesPerSecond();
  return result;
}

// Times Collect (harvest + arm) of a dirty-log window covering all of RAM.
void DirtyLogCost() {
  constexpr uint64_t kMemory = 1ull << 30;
  RunOptions options;
  options.vm.vcpus = 1;
  options.vm.memory_bytes = kMemory;
  options.vm.echo_console = false;
  options.vm.payload_args = "size=256M seconds=4";
  options.sampling.sampler = SamplerKind::kDirtyLog;
  options.sampling.window_bytes = kMemory;
  if (absl::Status s = NormalizeVmConfig(options.vm); !s.ok()) Die(s);
  absl::StatusOr<ElfPayload> elf = ReadElfPayload(absl::StrCat(NUMAVM_PAYLOAD_DIR, "/numa02.elf"));
  if (!elf.ok()) Die(elf.status());
  auto vm = VirtualMachine::Create(options.vm, *elf, nullptr);
  if (!vm.ok()) Die(vm.status());
  auto sampler = CreateSampler(options.sampling, **vm);
  if (!sampler.ok()) Die(sampler.status());
  if (absl::Status s = (*sampler)->Start(); !s.ok()) Die(s);
  if (absl::Status s = (*sampler)->Arm(ScanPlan{(*sampler)->Coverage(), (*sampler)->Coverage()});
      !s.ok())
    Die(s);
  std::thread runner([&] { (*vm)->Run(); });
  std::vector<double> ms;
  for (int i = 0; i < 30; ++i) {
    usleep(100000);
    AccessBatch batch;
    auto t0 = std::chrono::steady_clock::now();
    if (absl::Status s = (*sampler)->Collect(batch); !s.ok()) Die(s);
    if (absl::Status s = (*sampler)->Arm(ScanPlan{(*sampler)->Coverage(), (*sampler)->Coverage()});
        !s.ok())
      Die(s);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  runner.join();
  (*sampler)->Stop();
  std::printf("dirty-log arm+harvest of a 1 GiB window: median %.2f ms, p99 %.2f ms per GiB\n",
              Percentile(ms, 0.5), Percentile(ms, 0.99));
}

}  // namespace
}  // namespace numavm

int main(int argc, char** argv) {
  using namespace numavm;
  // sampler_bench [SECONDS [WINDOW_MIB [REPEATS [balance|anon]]]]: "balance"
  // runs only tracking off against hint faults with balancing on; "anon"
  // anonymous guest memory: off against its default sampler (evict),
  // write-protect faults, the dirty ring and evict with balancing on.
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  const uint64_t window = argc > 2 ? std::strtoull(argv[2], nullptr, 10) << 20 : 0;
  const int kRepeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  const bool balance_only = argc > 4 && std::string(argv[4]) == "balance";
  const bool anon = argc > 4 && std::string(argv[4]) == "anon";
  const Backing backing = anon ? Backing::kAnon : Backing::kMemfd;
  if (!balance_only && !anon) {
    HintRoundTrip();
    DirtyLogCost();
  }
  std::printf(
      "\nthroughput with each sampler (window %s, period 1 s) / off;\n"
      "2 vCPUs, 64 MiB working set of %s memory, %d s per run, steady state; runs\n"
      "interleaved, %d repeats, median ratio (min-max):\n",
      window ? absl::StrCat(window >> 20, " MiB").c_str() : "default",
      std::string(BackingName(backing)).c_str(), seconds, kRepeats);
  std::printf("%-12s %-9s %8s %15s %10s %10s %12s\n", "payload", "sampler", "MiB/s", "ratio",
              "samples", "armed", "sampler CPU");
  // Anonymous memory: its default (evict), write-protect faults and the
  // dirty ring, and the default with balancing on.
  const SamplerKind kinds[] = {anon ? SamplerKind::kEvict : SamplerKind::kHint,
                               anon ? SamplerKind::kWriteProtect : SamplerKind::kRing,
                               anon ? SamplerKind::kRing : SamplerKind::kDirtyLog,
                               anon ? SamplerKind::kEvict : SamplerKind::kHint};
  const char* names[] = {anon ? "evict" : "hint", anon ? "wp" : "ring", anon ? "ring" : "dirtylog",
                         anon ? "evict+bal" : "hint+bal"};
  for (const char* payload : {"numa02", "numa02_read"}) {
    std::vector<double> off_rates;
    std::vector<std::vector<double>> ratios(4);
    std::vector<VmRun> last(4);
    for (int rep = 0; rep < kRepeats; ++rep) {
      VmRun off = RunVm(payload, SamplerKind::kOff, seconds, 128ull << 20, window,
                        BalanceMode::kOff, backing);
      off_rates.push_back(off.bytes_per_second);
      for (int k = balance_only ? 3 : 0; k < 4; ++k) {
        last[k] = RunVm(payload, kinds[k], seconds, 128ull << 20, window,
                        k == 3 ? BalanceMode::kOn : BalanceMode::kOff, backing);
        ratios[k].push_back(last[k].bytes_per_second / off.bytes_per_second);
      }
    }
    std::printf("%-12s %-9s %8.2f %15s %10s %10s %12s\n", payload, "off",
                Percentile(off_rates, 0.5) / (1 << 20), "1", "-", "-", "-");
    for (int k = balance_only ? 3 : 0; k < 4; ++k) {
      std::printf("%-12s %-9s %8.2f %5.3f (%.3f-%.3f) %10lu %10lu %9.1f ms\n", payload, names[k],
                  last[k].bytes_per_second / (1 << 20), Percentile(ratios[k], 0.5),
                  Percentile(ratios[k], 0), Percentile(ratios[k], 1),
                  static_cast<unsigned long>(last[k].stats.samples),
                  static_cast<unsigned long>(last[k].stats.pages_armed),
                  absl::ToDoubleMilliseconds(last[k].sampler_cpu));
      if (kinds[k] == SamplerKind::kRing) {
        std::printf("%-12s %-9s dirty-ring harvest: %.1f ns per entry\n", "", "",
                    last[k].ring_ns_per_entry);
      }
    }
  }
  return 0;
}
