#include "balancer/libvirt/domain_cells.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "balancer/topology/topology.h"

namespace numavm {
namespace {

// The value of attribute `name` in the tag text `tag` ("<cell id='0' ...").
std::optional<std::string> Attribute(absl::string_view tag, absl::string_view name) {
  for (size_t at = tag.find(name); at != absl::string_view::npos; at = tag.find(name, at + 1)) {
    // A whole attribute name: after a space, followed by =.
    if (at == 0 || !absl::ascii_isspace(static_cast<unsigned char>(tag[at - 1]))) continue;
    size_t eq = at + name.size();
    while (eq < tag.size() && absl::ascii_isspace(static_cast<unsigned char>(tag[eq]))) ++eq;
    if (eq >= tag.size() || tag[eq] != '=') continue;
    size_t quote = eq + 1;
    while (quote < tag.size() && absl::ascii_isspace(static_cast<unsigned char>(tag[quote])))
      ++quote;
    if (quote >= tag.size() || (tag[quote] != '\'' && tag[quote] != '"')) return std::nullopt;
    const size_t end = tag.find(tag[quote], quote + 1);
    if (end == absl::string_view::npos) return std::nullopt;
    return std::string(tag.substr(quote + 1, end - quote - 1));
  }
  return std::nullopt;
}

absl::StatusOr<uint64_t> UnitBytes(const std::string& unit) {
  // libvirt's units (formatdomain: "Memory Allocation"): powers of 1024
  // except the SI ones.
  static const std::pair<const char*, uint64_t> kUnits[] = {{"b", 1},
                                                            {"bytes", 1},
                                                            {"k", 1ull << 10},
                                                            {"kib", 1ull << 10},
                                                            {"kb", 1000},
                                                            {"m", 1ull << 20},
                                                            {"mib", 1ull << 20},
                                                            {"mb", 1000000},
                                                            {"g", 1ull << 30},
                                                            {"gib", 1ull << 30},
                                                            {"gb", 1000000000},
                                                            {"t", 1ull << 40},
                                                            {"tib", 1ull << 40},
                                                            {"tb", 1000000000000}};
  const std::string lower = absl::AsciiStrToLower(unit);
  for (const auto& [name, bytes] : kUnits) {
    if (lower == name) return bytes;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown memory unit '", unit, "'"));
}

}  // namespace

absl::StatusOr<std::vector<DomainCell>> ParseDomainCells(absl::string_view xml, int vcpus) {
  std::vector<DomainCell> cells;
  // <numa> inside <cpu> (not <numatune>).
  const size_t cpu = xml.find("<cpu");
  if (cpu == absl::string_view::npos) return cells;
  const size_t cpu_end = xml.find("</cpu>", cpu);
  const absl::string_view cpu_xml =
      xml.substr(cpu, cpu_end == absl::string_view::npos ? absl::string_view::npos : cpu_end - cpu);
  const size_t numa = cpu_xml.find("<numa>");
  if (numa == absl::string_view::npos) return cells;
  const size_t numa_end = cpu_xml.find("</numa>", numa);
  const absl::string_view numa_xml = cpu_xml.substr(
      numa, numa_end == absl::string_view::npos ? absl::string_view::npos : numa_end - numa);
  std::vector<bool> seen(std::max(vcpus, 0), false);
  for (size_t at = numa_xml.find("<cell"); at != absl::string_view::npos;
       at = numa_xml.find("<cell", at + 1)) {
    const size_t end = numa_xml.find('>', at);
    if (end == absl::string_view::npos) break;
    const absl::string_view tag = numa_xml.substr(at, end - at);
    DomainCell cell;
    cell.id = static_cast<int>(cells.size());
    if (std::optional<std::string> id = Attribute(tag, "id");
        id && !absl::SimpleAtoi(*id, &cell.id)) {
      return absl::InvalidArgumentError(absl::StrCat("guest cell id '", *id, "' is not a number"));
    }
    if (std::optional<std::string> list = Attribute(tag, "cpus"); list && !list->empty()) {
      absl::StatusOr<std::vector<int>> ids = ParseCpuList(*list, std::max(vcpus - 1, 0));
      if (!ids.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("guest cell ", cell.id, " cpus='", *list, "': ", ids.status().message()));
      }
      for (int v : *ids) {
        if (v >= vcpus || seen[v]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "guest cell ", cell.id, " names vCPU ", v,
              v >= vcpus ? absl::StrCat(" of a domain with ", vcpus, " vCPUs") : " twice"));
        }
        seen[v] = true;
      }
      cell.vcpus = *ids;
    }
    uint64_t amount = 0;
    std::optional<std::string> memory = Attribute(tag, "memory");
    if (!memory || !absl::SimpleAtoi(*memory, &amount) || amount == 0) {
      return absl::InvalidArgumentError(absl::StrCat("guest cell ", cell.id, " has no memory"));
    }
    absl::StatusOr<uint64_t> unit = UnitBytes(Attribute(tag, "unit").value_or("KiB"));
    if (!unit.ok()) return unit.status();
    if (amount > UINT64_MAX / *unit) {
      return absl::InvalidArgumentError(absl::StrCat("guest cell ", cell.id, " is too large"));
    }
    cell.bytes = amount * *unit;
    cells.push_back(std::move(cell));
  }
  // <numatune><memnode cellid='N' mode='strict' nodeset='1'/>.
  const size_t tune = xml.find("<numatune>");
  const size_t tune_end = xml.find("</numatune>", tune == absl::string_view::npos ? 0 : tune);
  if (tune != absl::string_view::npos && tune_end != absl::string_view::npos) {
    const absl::string_view tune_xml = xml.substr(tune, tune_end - tune);
    for (size_t at = tune_xml.find("<memnode"); at != absl::string_view::npos;
         at = tune_xml.find("<memnode", at + 1)) {
      const size_t end = tune_xml.find('>', at);
      if (end == absl::string_view::npos) break;
      const absl::string_view tag = tune_xml.substr(at, end - at);
      int id = -1;
      std::optional<std::string> cellid = Attribute(tag, "cellid");
      if (!cellid || !absl::SimpleAtoi(*cellid, &id)) continue;
      for (DomainCell& c : cells) {
        if (c.id != id) continue;
        c.memnode_mode = Attribute(tag, "mode").value_or("strict");
        c.memnode_nodeset = Attribute(tag, "nodeset").value_or("");
      }
    }
  }
  return cells;
}

absl::StatusOr<std::vector<HostRange>> FindCellRam(const std::vector<MapsEntry>& maps,
                                                   const std::vector<DomainCell>& cells) {
  std::vector<const MapsEntry*> candidates;  // writable, of a cell's size, highest first
  for (const MapsEntry& m : maps) {
    if (!m.writable) continue;
    for (const DomainCell& c : cells) {
      if (m.bytes() == c.bytes) {
        candidates.push_back(&m);
        break;
      }
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const MapsEntry* a, const MapsEntry* b) { return a->start > b->start; });
  std::vector<HostRange> found;
  int matches = 0;
  for (size_t i = 0; i + cells.size() <= candidates.size(); ++i) {
    bool all = true;
    for (size_t k = 0; k < cells.size() && all; ++k)
      all = candidates[i + k]->bytes() == cells[k].bytes;
    if (!all) continue;
    if (++matches > 1) {
      return absl::FailedPreconditionError(
          "guest RAM: more than one set of mappings has the sizes of the guest's cells");
    }
    for (size_t k = 0; k < cells.size(); ++k) {
      found.push_back(HostRange{candidates[i + k]->start, candidates[i + k]->bytes()});
    }
  }
  if (found.empty()) {
    return absl::FailedPreconditionError(
        "guest RAM: no writable mappings of the guest cells' sizes, in cell order, in the QEMU "
        "process");
  }
  return found;
}

absl::StatusOr<DomainRam> FindDomainRam(const std::vector<MapsEntry>& maps,
                                        std::vector<DomainCell> cells, int vcpus,
                                        uint64_t max_memory) {
  DomainRam ram;
  if (cells.size() >= 2) {
    absl::StatusOr<std::vector<HostRange>> found = FindCellRam(maps, cells);
    if (!found.ok()) return found.status();
    ram.ranges = *std::move(found);
    ram.cells = std::move(cells);
    return ram;
  }
  absl::StatusOr<HostRange> whole_ram = FindGuestRam(maps, max_memory);
  if (!whole_ram.ok()) return absl::FailedPreconditionError(whole_ram.status().message());
  DomainCell whole{0, {}, whole_ram->bytes};
  for (int v = 0; v < vcpus; ++v) whole.vcpus.push_back(v);
  if (cells.size() == 1) {  // one cell: its <memnode> binds all the memory
    whole.memnode_mode = cells[0].memnode_mode;
    whole.memnode_nodeset = cells[0].memnode_nodeset;
  }
  ram.cells = {whole};
  ram.ranges = {*whole_ram};
  return ram;
}

}  // namespace numavm
