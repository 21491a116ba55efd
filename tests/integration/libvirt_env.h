// A real libvirt daemon for the integration tests: uses a running one or
// starts virtlogd and libvirtd itself (and stops exactly those, by pid);
// creates transient TCG domains that idle in the firmware with all their
// RAM allocated (memfd or anonymous), and destroys them afterwards.
//
// When the QEMU user libvirt runs domains as cannot open /dev/kvm (it is
// root-only on some hosts), libvirt re-probes QEMU for 35 s before every
// domain start; the environment then gives /dev/kvm to the kvm group, as
// Debian's udev rules do on an ordinary host, and puts the old owner and
// mode back at the end.
#ifndef NUMAVM_TESTS_INTEGRATION_LIBVIRT_ENV_H_
#define NUMAVM_TESTS_INTEGRATION_LIBVIRT_ENV_H_

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "balancer/libvirt/libvirt_api.h"

namespace numavm::testing {

class LibvirtEnv : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  // Empty if libvirt is usable, else why not (tests skip with it).
  static const std::string& unavailable();
  static LibvirtConnection& connection();
  static std::string uri() { return "qemu:///system"; }

  // Stops the libvirtd the environment started and starts it again (its
  // domains keep running); FailedPrecondition for a libvirtd it did not
  // start. connection() is the new one afterwards.
  static absl::Status RestartLibvirtd();

  // A running domain: `backing` "memfd" or "anon"; with `cells` > 0, that
  // many guest NUMA cells (<cpu><numa>), vCPUs and memory split evenly;
  // `extra` is more XML for <domain> (e.g. a <numatune>).
  static absl::StatusOr<LibvirtDomain> CreateDomain(const std::string& backing, int vcpus,
                                                    int memory_mib, int cells = 0,
                                                    const std::string& extra = "");
};

}  // namespace numavm::testing

#endif  // NUMAVM_TESTS_INTEGRATION_LIBVIRT_ENV_H_
