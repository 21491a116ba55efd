// A small seeded generator with the same sequence on every platform and
// standard library (std::*_distribution are not specified to), so that
// `numavm simulate --seed N` prints the same figures everywhere.
#ifndef NUMAVM_BALANCER_SIMULATE_RANDOM_H_
#define NUMAVM_BALANCER_SIMULATE_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace numavm {

class SimRandom {
 public:
  explicit SimRandom(uint64_t seed)
      : state_(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}

  // splitmix64.
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so that log() is finite.
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Pages to skip before the next success of a run of Bernoulli(p) trials
  // (geometric, 0 = the very next one). p in (0, 1].
  uint64_t Skip(double p) {
    if (p >= 1) return 0;
    const double k = std::floor(std::log(Uniform()) / std::log1p(-p));
    return k >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(k);
  }

 private:
  uint64_t state_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_RANDOM_H_
