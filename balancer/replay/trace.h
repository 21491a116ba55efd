// A recorded access stream: what `numavm run --record FILE` saw, period by
// period, so that `numavm replay` can run the same policy against a model.
//
// The file is line-oriented text, versioned on its first line:
//   numavm-trace 1
//   vm vcpus=2 pages=131072 period_us=1000000 payload=numa02 sampler=hint
//   b 1000412 3a0f.1.w 3a10.1.r 77.0.w      (one line per period:
//                                             time in us, then gfn.vcpu.kind,
//                                             gfn in hex, vcpu -1 if unknown)
// Lines starting with '#' are comments. Any other line is an error that
// names the line.
#ifndef NUMAVM_BALANCER_REPLAY_TRACE_H_
#define NUMAVM_BALANCER_REPLAY_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "balancer/sampling/access_sample.h"

namespace numavm {

// The most pages a trace may declare: a guest of 1 TiB (as the simulator).
inline constexpr uint64_t kMaxTracePages = (1ull << 40) / 4096;

struct TraceHeader {
  int vcpus = 0;
  uint64_t pages = 0;  // guest pages (4 KiB)
  absl::Duration period = absl::Seconds(1);
  std::string payload;
  std::string sampler;
};

struct TracePeriod {
  absl::Duration at;  // when the batch was collected, since the VM started
  AccessBatch samples;
};

struct AccessTrace {
  TraceHeader header;
  std::vector<TracePeriod> periods;
  uint64_t sample_count() const;
};

std::string FormatTraceHeader(const TraceHeader& header);
std::string FormatTracePeriod(absl::Duration at, const AccessBatch& batch);

// `source` names the input in errors.
absl::StatusOr<AccessTrace> ParseTrace(absl::string_view text, absl::string_view source);
absl::StatusOr<AccessTrace> ReadTraceFile(const std::string& path);

// Appends periods to a file as they come; write errors are kept, not thrown,
// and reported by Close (recording never stops the VM).
class TraceWriter {
 public:
  static absl::StatusOr<TraceWriter> Create(const std::string& path, const TraceHeader& header);
  TraceWriter(TraceWriter&& other) noexcept : file_(other.file_), status_(other.status_) {
    other.file_ = nullptr;
  }
  TraceWriter& operator=(TraceWriter&&) = delete;
  ~TraceWriter();

  void Append(absl::Duration at, const AccessBatch& batch);
  absl::Status Close();

 private:
  TraceWriter(std::FILE* file) : file_(file) {}
  std::FILE* file_;
  absl::Status status_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPLAY_TRACE_H_
