// The libvirt C API behind RAII handles and absl::Status: connections,
// domains, vCPU pinning, the QEMU monitor. Every libvirt error becomes a
// status carrying libvirt's own message; nothing is printed by libvirt.
#ifndef NUMAVM_BALANCER_LIBVIRT_LIBVIRT_API_H_
#define NUMAVM_BALANCER_LIBVIRT_LIBVIRT_API_H_

#include <libvirt/libvirt.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace numavm {

class LibvirtDomain;

class LibvirtConnection {
 public:
  // `uri` empty: libvirt's default (LIBVIRT_DEFAULT_URI, else qemu:///system for root).
  static absl::StatusOr<LibvirtConnection> Open(const std::string& uri);
  LibvirtConnection(LibvirtConnection&&) = default;
  LibvirtConnection& operator=(LibvirtConnection&&) = default;

  std::string uri() const;
  bool alive() const;
  int host_cpus() const;  // size of the host CPU map libvirt uses
  absl::StatusOr<std::vector<LibvirtDomain>> ActiveDomains() const;
  absl::StatusOr<LibvirtDomain> Lookup(const std::string& name) const;
  // A transient domain from XML (tests and the lab create their domains so).
  absl::StatusOr<LibvirtDomain> CreateTransient(const std::string& xml) const;

 private:
  struct Close {
    void operator()(virConnectPtr c) const { virConnectClose(c); }
  };
  explicit LibvirtConnection(virConnectPtr c) : conn_(c) {}
  std::unique_ptr<virConnect, Close> conn_;
};

class LibvirtDomain {
 public:
  std::string name() const { return name_; }
  std::string uuid() const;
  bool active() const;
  absl::StatusOr<int> vcpus() const;
  absl::StatusOr<uint64_t> memory_bytes() const;      // current memory
  absl::StatusOr<uint64_t> max_memory_bytes() const;  // maximum memory
  // Live affinity of each vCPU: host CPU numbers.
  absl::StatusOr<std::vector<std::vector<int>>> VcpuPinning(int host_cpus) const;
  // The domain's <numatune><memory mode= nodeset=>, live
  // (virDomainGetNumaParameters): mode "strict", "preferred", "interleave"
  // or "restrictive", and the nodeset as libvirt prints it ("0-1,3"); both
  // empty when the domain has none.
  struct NumaTune {
    std::string mode;
    std::string nodeset;
  };
  absl::StatusOr<NumaTune> NumaTuning() const;
  // The live domain XML (virDomainGetXMLDesc, no flags: read-only).
  absl::StatusOr<std::string> XmlDesc() const;
  // Live affinity of its emulator threads (<emulatorpin>, virsh
  // emulatorpin): host CPU numbers; numavm reads it and never sets it.
  absl::StatusOr<std::vector<int>> EmulatorPinning(int host_cpus) const;
  absl::Status PinVcpu(int vcpu, const std::vector<int>& cpus, int host_cpus) const;
  // Host CPU each vCPU ran on last (virDomainGetVcpus).
  absl::StatusOr<std::vector<int>> VcpuCpus(int host_cpus) const;
  absl::Status Destroy() const;

 private:
  friend class LibvirtConnection;
  struct Free {
    void operator()(virDomainPtr d) const { virDomainFree(d); }
  };
  explicit LibvirtDomain(virDomainPtr d);
  std::shared_ptr<virDomain> dom_;
  std::string name_;
};

// The last libvirt error as a status (`what` says which call failed).
absl::Status LibvirtError(const std::string& what);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_LIBVIRT_API_H_
