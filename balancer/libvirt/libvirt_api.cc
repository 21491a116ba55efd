#include "balancer/libvirt/libvirt_api.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

// libvirt prints every error to stderr unless told otherwise; we report
// them through statuses instead.
void Quiet(void*, virErrorPtr) {}

void SilenceOnce() {
  static const bool done = [] {
    virSetErrorFunc(nullptr, Quiet);
    return true;
  }();
  (void)done;
}

std::vector<unsigned char> CpuMap(const std::vector<int>& cpus, int host_cpus) {
  std::vector<unsigned char> map(VIR_CPU_MAPLEN(host_cpus), 0);
  for (int c : cpus) {
    if (c >= 0 && c < host_cpus) VIR_USE_CPU(map.data(), c);
  }
  return map;
}

}  // namespace

absl::Status LibvirtError(const std::string& what) {
  virErrorPtr e = virGetLastError();
  std::string message = e != nullptr && e->message != nullptr ? e->message : "unknown error";
  const int code = e != nullptr ? e->code : VIR_ERR_INTERNAL_ERROR;
  virResetLastError();
  const std::string text = absl::StrCat(what, ": ", message);
  switch (code) {
    case VIR_ERR_NO_DOMAIN:
    case VIR_ERR_OPERATION_INVALID:  // e.g. the domain is not running
      return absl::NotFoundError(text);
    case VIR_ERR_NO_CONNECT:
    case VIR_ERR_SYSTEM_ERROR:
    case VIR_ERR_RPC:
      return absl::UnavailableError(text);
    case VIR_ERR_INVALID_ARG:
    case VIR_ERR_XML_ERROR:
      return absl::InvalidArgumentError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::StatusOr<LibvirtConnection> LibvirtConnection::Open(const std::string& uri) {
  SilenceOnce();
  virConnectPtr c = virConnectOpen(uri.empty() ? nullptr : uri.c_str());
  if (c == nullptr) {
    return LibvirtError(absl::StrCat("cannot connect to libvirt at ",
                                     uri.empty() ? std::string("the default URI") : uri));
  }
  return LibvirtConnection(c);
}

std::string LibvirtConnection::uri() const {
  char* u = virConnectGetURI(conn_.get());
  if (u == nullptr) return "?";
  std::string out(u);
  free(u);
  return out;
}

bool LibvirtConnection::alive() const { return virConnectIsAlive(conn_.get()) == 1; }

int LibvirtConnection::host_cpus() const {
  int n = virNodeGetCPUMap(conn_.get(), nullptr, nullptr, 0);
  return n > 0 ? n : 1;
}

absl::StatusOr<std::vector<LibvirtDomain>> LibvirtConnection::ActiveDomains() const {
  virDomainPtr* list = nullptr;
  int n = virConnectListAllDomains(conn_.get(), &list, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
  if (n < 0) return LibvirtError("listing domains");
  std::vector<LibvirtDomain> out;
  for (int i = 0; i < n; ++i) out.push_back(LibvirtDomain(list[i]));
  free(list);
  return out;
}

absl::StatusOr<LibvirtDomain> LibvirtConnection::Lookup(const std::string& name) const {
  virDomainPtr d = virDomainLookupByName(conn_.get(), name.c_str());
  if (d == nullptr) return LibvirtError(absl::StrCat("domain '", name, "'"));
  return LibvirtDomain(d);
}

absl::StatusOr<LibvirtDomain> LibvirtConnection::CreateTransient(const std::string& xml) const {
  virDomainPtr d = virDomainCreateXML(conn_.get(), xml.c_str(), 0);
  if (d == nullptr) return LibvirtError("creating a domain");
  return LibvirtDomain(d);
}

LibvirtDomain::LibvirtDomain(virDomainPtr d) : dom_(d, Free()) {
  const char* n = virDomainGetName(d);
  name_ = n != nullptr ? n : "?";
}

std::string LibvirtDomain::uuid() const {
  char buf[VIR_UUID_STRING_BUFLEN] = {};
  return virDomainGetUUIDString(dom_.get(), buf) == 0 ? std::string(buf) : std::string();
}

bool LibvirtDomain::active() const { return virDomainIsActive(dom_.get()) == 1; }

absl::StatusOr<int> LibvirtDomain::vcpus() const {
  virDomainInfo info;
  if (virDomainGetInfo(dom_.get(), &info) < 0)
    return LibvirtError(absl::StrCat("domain '", name_, "' info"));
  return static_cast<int>(info.nrVirtCpu);
}

absl::StatusOr<uint64_t> LibvirtDomain::memory_bytes() const {
  virDomainInfo info;
  if (virDomainGetInfo(dom_.get(), &info) < 0)
    return LibvirtError(absl::StrCat("domain '", name_, "' info"));
  return static_cast<uint64_t>(info.memory) * 1024;
}

absl::StatusOr<uint64_t> LibvirtDomain::max_memory_bytes() const {
  const unsigned long kib = virDomainGetMaxMemory(dom_.get());
  if (kib == 0) return LibvirtError(absl::StrCat("domain '", name_, "' maximum memory"));
  return static_cast<uint64_t>(kib) * 1024;
}

absl::StatusOr<std::string> LibvirtDomain::XmlDesc() const {
  char* xml = virDomainGetXMLDesc(dom_.get(), 0);
  if (xml == nullptr) return LibvirtError(absl::StrCat("domain '", name_, "' XML"));
  std::string out(xml);
  free(xml);
  return out;
}

absl::StatusOr<LibvirtDomain::NumaTune> LibvirtDomain::NumaTuning() const {
  int n = 0;
  if (virDomainGetNumaParameters(dom_.get(), nullptr, &n, VIR_DOMAIN_AFFECT_LIVE) < 0) {
    return LibvirtError(absl::StrCat("domain '", name_, "' NUMA tuning"));
  }
  std::vector<virTypedParameter> params(static_cast<size_t>(std::max(n, 0)));
  if (n > 0 &&
      virDomainGetNumaParameters(dom_.get(), params.data(), &n, VIR_DOMAIN_AFFECT_LIVE) < 0) {
    return LibvirtError(absl::StrCat("domain '", name_, "' NUMA tuning"));
  }
  NumaTune out;
  bool have_nodeset = false;
  int mode = -1;
  for (int i = 0; i < n; ++i) {
    const virTypedParameter& p = params[i];
    if (std::string(p.field) == VIR_DOMAIN_NUMA_NODESET && p.type == VIR_TYPED_PARAM_STRING &&
        p.value.s != nullptr) {
      out.nodeset = p.value.s;
      have_nodeset = !out.nodeset.empty();
    } else if (std::string(p.field) == VIR_DOMAIN_NUMA_MODE && p.type == VIR_TYPED_PARAM_INT) {
      mode = p.value.i;
    }
  }
  virTypedParamsClear(params.data(), n);
  // Without a nodeset the mode is libvirt's default, not the domain's.
  if (!have_nodeset) return NumaTune{};
  switch (mode) {
    case VIR_DOMAIN_NUMATUNE_MEM_STRICT:
      out.mode = "strict";
      break;
    case VIR_DOMAIN_NUMATUNE_MEM_PREFERRED:
      out.mode = "preferred";
      break;
    case VIR_DOMAIN_NUMATUNE_MEM_INTERLEAVE:
      out.mode = "interleave";
      break;
    default:
      out.mode = "restrictive";
      break;
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<int>>> LibvirtDomain::VcpuPinning(int host_cpus) const {
  absl::StatusOr<int> n = vcpus();
  if (!n.ok()) return n.status();
  const int maplen = VIR_CPU_MAPLEN(host_cpus);
  std::vector<unsigned char> maps(static_cast<size_t>(*n) * maplen, 0);
  int got = virDomainGetVcpuPinInfo(dom_.get(), *n, maps.data(), maplen, VIR_DOMAIN_AFFECT_LIVE);
  if (got < 0) return LibvirtError(absl::StrCat("domain '", name_, "' vCPU pinning"));
  std::vector<std::vector<int>> out(got);
  for (int v = 0; v < got; ++v) {
    for (int c = 0; c < host_cpus; ++c) {
      if (VIR_CPU_USABLE(maps.data(), maplen, v, c)) out[v].push_back(c);
    }
  }
  return out;
}

absl::StatusOr<std::vector<int>> LibvirtDomain::EmulatorPinning(int host_cpus) const {
  const int maplen = VIR_CPU_MAPLEN(host_cpus);
  std::vector<unsigned char> map(static_cast<size_t>(maplen), 0);
  if (virDomainGetEmulatorPinInfo(dom_.get(), map.data(), maplen, VIR_DOMAIN_AFFECT_LIVE) < 0) {
    return LibvirtError(absl::StrCat("domain '", name_, "' emulator pinning"));
  }
  std::vector<int> out;
  for (int c = 0; c < host_cpus; ++c) {
    if (VIR_CPU_USABLE(map.data(), maplen, 0, c)) out.push_back(c);
  }
  return out;
}

absl::Status LibvirtDomain::PinVcpu(int vcpu, const std::vector<int>& cpus, int host_cpus) const {
  std::vector<unsigned char> map = CpuMap(cpus, host_cpus);
  if (virDomainPinVcpuFlags(dom_.get(), static_cast<unsigned>(vcpu), map.data(),
                            static_cast<int>(map.size()), VIR_DOMAIN_AFFECT_LIVE) < 0) {
    return LibvirtError(absl::StrCat("pinning vCPU ", vcpu, " of '", name_, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> LibvirtDomain::VcpuCpus(int host_cpus) const {
  absl::StatusOr<int> n = vcpus();
  if (!n.ok()) return n.status();
  std::vector<virVcpuInfo> info(*n);
  int got = virDomainGetVcpus(dom_.get(), info.data(), *n, nullptr, 0);
  if (got < 0) return LibvirtError(absl::StrCat("domain '", name_, "' vCPUs"));
  (void)host_cpus;
  std::vector<int> out(got);
  for (int i = 0; i < got; ++i) out[i] = info[i].cpu;
  return out;
}

absl::Status LibvirtDomain::Destroy() const {
  if (virDomainDestroy(dom_.get()) < 0)
    return LibvirtError(absl::StrCat("destroying '", name_, "'"));
  return absl::OkStatus();
}

}  // namespace numavm
