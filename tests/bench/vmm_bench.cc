// Bundled-VMM figures: VM start-up to the first guest instruction, and guest
// memory bandwidth per vCPU for numa02 and numa02_read.
//
//   build/tests/bench/vmm_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "vmm/elf_payload.h"
#include "vmm/virtual_machine.h"

namespace numavm {
namespace {

RunOutcome RunVm(const std::string& payload, int vcpus, uint64_t memory, const std::string& args) {
  absl::StatusOr<ElfPayload> elf =
      ReadElfPayload(absl::StrCat(NUMAVM_PAYLOAD_DIR, "/", payload, ".elf"));
  if (!elf.ok()) {
    std::fprintf(stderr, "%s\n", std::string(elf.status().message()).c_str());
    std::exit(1);
  }
  VmConfig config;
  config.vcpus = vcpus;
  config.memory_bytes = memory;
  config.payload_args = args;
  config.echo_console = false;
  if (absl::Status s = NormalizeVmConfig(config); !s.ok()) std::exit(1);
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(config, *elf, nullptr);
  if (!vm.ok()) {
    std::fprintf(stderr, "%s\n", std::string(vm.status().message()).c_str());
    std::exit(1);
  }
  return (*vm)->Run();
}

// From the start of VM creation (memory, KVM, vCPUs, page tables, payload)
// to the first instruction the guest reports.
void BM_StartupToFirstInstruction(benchmark::State& state) {
  const uint64_t memory = static_cast<uint64_t>(state.range(0)) << 20;
  for (auto _ : state) {
    RunOutcome o = RunVm("idle", 1, memory, "size=4096 iterations=0");
    if (!o.startup || o.end != RunEnd::kCompleted) {
      state.SkipWithError("VM did not start");
      return;
    }
    state.SetIterationTime(absl::ToDoubleSeconds(*o.startup));
  }
  state.SetLabel(absl::StrCat(state.range(0), " MiB guest"));
}
BENCHMARK(BM_StartupToFirstInstruction)
    ->Arg(512)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// Steady-state bytes per second of each vCPU (first touch excluded).
void GuestBandwidth(benchmark::State& state, const std::string& payload) {
  const int vcpus = static_cast<int>(state.range(0));
  const uint64_t size_mib = 64;
  const int seconds = 5;
  for (auto _ : state) {
    RunOutcome o = RunVm(payload, vcpus, (size_mib + 32) << 20,
                         absl::StrCat("size=", size_mib, "M seconds=", seconds));
    if (o.end != RunEnd::kCompleted) {
      state.SkipWithError("VM did not complete");
      return;
    }
    double total = 0;
    for (size_t v = 0; v < o.record.vcpus.size(); ++v) {
      double rate = o.record.vcpus[v].BytesPerSecond();
      total += rate;
      state.counters[absl::StrCat("vcpu", v, "_MiB/s")] = rate / (1 << 20);
    }
    state.counters["per_vcpu_MiB/s"] = total / vcpus / (1 << 20);
  }
  state.SetLabel(absl::StrCat(payload, ", ", vcpus, " vCPUs, ", size_mib, " MiB, stride 64"));
}
void BM_Numa02Bandwidth(benchmark::State& state) { GuestBandwidth(state, "numa02"); }
void BM_Numa02ReadBandwidth(benchmark::State& state) { GuestBandwidth(state, "numa02_read"); }
BENCHMARK(BM_Numa02Bandwidth)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_Numa02ReadBandwidth)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace numavm

BENCHMARK_MAIN();
