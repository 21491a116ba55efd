#include "balancer/region_balancer.h"

#include <algorithm>

namespace numavm {
namespace {

uint64_t Key(uint64_t region, int sub) { return region * 8 + static_cast<uint64_t>(sub + 1); }

void Add(RegionVisit& v, int target, bool in_place) {
  if (v.samples == 0) {
    v.target = target;
  } else if (v.target != target) {
    v.unanimous = false;
  }
  ++v.samples;
  if (!in_place) v.in_place = false;
}

}  // namespace

void RegionBalancer::AddSample(uint64_t gfn, int target, uint64_t acceptable, int page_node,
                               bool private_page, int vcpu, int group) {
  const uint64_t region = RegionTable::RegionOf(gfn);
  Visit& v = visits_[region];
  const bool in_place = page_node >= 0 && page_node < 64 && ((acceptable >> page_node) & 1);
  if (v.whole.samples == 0) {
    v.acceptable = acceptable;
    v.owner = vcpu >= 0 && vcpu < kNoOwner ? vcpu : -1;
    v.group = group >= 0 && group < kNoOwner ? group : -1;
  } else {
    if (v.owner != vcpu) v.owner = -1;
    if (v.group != group) v.group = -1;
  }
  if (!in_place) v.from = page_node;
  Add(v.whole, target, in_place);
  // A quarter decides only on private pages: one sample of a shared page
  // agrees with the next by chance.
  RegionVisit& q = v.sub[(gfn % kRegionPages) / kSubRegionPages];
  Add(q, target, in_place);
  if (!private_page) q.unanimous = false;
}

void RegionBalancer::Witness(uint64_t neighbour, RegionVisit& visit) {
  const RegionState& n = regions_.at(neighbour);
  if (n.settled() && n.node == visit.target && !(n.flags & RegionState::kSplit)) {
    visit.witness_chain = std::min(visit.witness_chain, static_cast<int>(n.chain));
  }
}

RegionState* RegionBalancer::StateOf(const RegionMoves::Unit& unit) {
  if (unit.sub < 0) return &regions_.at(unit.region);
  auto it = split_.find(unit.region);
  return it == split_.end() ? nullptr : &it->second[unit.sub];
}

void RegionBalancer::Act(const RegionVerdict& verdict, RegionState& state,
                         const RegionMoves::Unit& unit, const Visit& v, bool act, bool warming_up,
                         DecisionCounts& decisions, const Advice& advice, Outcome& out) {
  switch (verdict.reason) {
    case RegionReason::kMove: {
      decided_.insert(Key(unit.region, unit.sub));
      ++decisions[Decision::kRegionMove];
      ++out.wanted;
      if (warming_up) {
        ++decisions[Decision::kWarmingUp];
        break;
      }
      const uint64_t first =
          unit.region * kRegionPages + (unit.sub < 0 ? 0 : unit.sub * kSubRegionPages);
      if (advice) {
        advice(first, unit.sub < 0 ? kRegionPages : kSubRegionPages, v.from, verdict.to_node,
               "region-move");
      }
      if (act) moves_.Push(state, unit, v.acceptable);
      break;
    }
    case RegionReason::kInPlace:
      decided_.insert(Key(unit.region, unit.sub));
      ++decisions[Decision::kRegionInPlace];
      break;
    case RegionReason::kDissent:
      ++decisions[Decision::kRegionDissent];
      ++out.changing;
      break;
    case RegionReason::kUnsettled:
      break;
  }
}

RegionBalancer::Outcome RegionBalancer::Decide(bool act, bool warming_up, DecisionCounts& decisions,
                                               const Advice& advice) {
  Outcome out;
  ++decides_;
  absl::erase_if(moved_lately_, [this](const std::pair<const uint64_t, uint32_t>& m) {
    return decides_ - m.second > kBracketPeriods;
  });
  decided_.clear();
  out.visits = visits_.size();
  // In address order, so that a region settled by this period's visit is a
  // witness for the next one (RegionVisit::witness_chain).
  std::vector<uint64_t> order;
  order.reserve(visits_.size());
  for (const auto& entry : visits_) order.push_back(entry.first);
  std::sort(order.begin(), order.end());
  for (uint64_t region : order) {
    Visit& v = visits_[region];
    RegionState& state = regions_.at(region);
    if (v.whole.unanimous) {
      if (region > 0) Witness(region - 1, v.whole);
      if (region + 1 < regions_.size()) Witness(region + 1, v.whole);
      if (BracketsTrusted()) {
        if (std::optional<uint64_t> b = Bracket(region, v.whole.target, v.owner)) {
          Witness(*b, v.whole);
        }
      }
    }
    if (state.flags & RegionState::kBracket) {
      // Moved on the word of the regions either side: does its own visit
      // bear them out?
      const bool borne_out = v.whole.unanimous && v.whole.target == state.node;
      ++(borne_out ? brackets_borne_out_ : brackets_contradicted_);
      state.flags &= static_cast<uint8_t>(~RegionState::kBracket);
    }
    // A region on its way to a decision (agreeing samples, not settled yet)
    // keeps the scan going as much as one that disagrees with its decision.
    if (v.whole.unanimous && !state.settled()) ++out.changing;
    if (v.whole.unanimous && state.settled() && v.whole.target != state.node) ++out.dissents;
    const RegionVerdict whole = OnRegionVisit(state, v.whole);
    const bool split = state.flags & RegionState::kSplit;
    if (!split && whole.again) out.revisit.push_back(region);
    // Whose it is: the one vCPU behind a visit that agreed, or the one
    // vCPU group on one node (a visit of several vCPUs or groups, or of a
    // group over several nodes, makes it nobody's).
    const bool one = v.whole.unanimous && !split;
    owner_[region] = kNoOwner;
    state.flags &= static_cast<uint8_t>(~RegionState::kGroupOwned);
    if (one && v.owner >= 0) {
      owner_[region] = static_cast<uint8_t>(v.owner);
    } else if (one && v.group >= 0) {
      owner_[region] = static_cast<uint8_t>(v.group);
      state.flags |= RegionState::kGroupOwned;
    }
    if (split && (whole.reason == RegionReason::kMove || whole.reason == RegionReason::kInPlace)) {
      // It agrees as a whole again: one region.
      split_.erase(region);
      state.flags &= static_cast<uint8_t>(~RegionState::kSplit);
    } else if (split) {
      std::array<RegionState, kSubRegions>& subs = split_[region];
      for (int q = 0; q < kSubRegions; ++q) {
        if (v.sub[q].samples == 0) continue;
        Act(OnRegionVisit(subs[q], v.sub[q]), subs[q], {region, q}, v, act, warming_up, decisions,
            advice, out);
      }
      continue;
    } else if (!v.whole.unanimous && state.flips >= 2) {
      // Disagreeing within itself again and again: decide by quarters,
      // which start as wary as the region (they must agree a few times).
      state.flags |= RegionState::kSplit;
      std::array<RegionState, kSubRegions>& subs = split_[region];
      for (RegionState& q : subs) q.flips = 1;
      continue;
    }
    Act(whole, state, {region, -1}, v, act, warming_up, decisions, advice, out);
    if (whole.reason == RegionReason::kMove) {
      moved_lately_[region] = decides_;
      Infer(region, act, warming_up, decisions, advice, out);
    }
  }
  visits_.clear();
  return out;
}

std::optional<uint64_t> RegionBalancer::Bracket(uint64_t region, int node, int owner) const {
  if (node < 0 || region < 2) return std::nullopt;
  const uint8_t who = owner >= 0 && owner < kNoOwner ? static_cast<uint8_t>(owner) : kNoOwner;
  const uint64_t lowest = region > kBracketSpan ? region - kBracketSpan : 0;
  for (uint64_t b = region - 1; b-- > lowest;) {
    if (visits_.contains(b + 1) && b + 1 < region) return std::nullopt;  // a region between
    const RegionState& s = regions_.at(b);
    if (!moved_lately_.contains(b)) continue;
    if (!s.settled() || s.node != node ||
        (s.flags & (RegionState::kSplit | RegionState::kMisled)) || VcpuOwner(b) != who) {
      return std::nullopt;  // the nearest region moved lately says otherwise
    }
    return b;
  }
  return std::nullopt;
}

void RegionBalancer::Infer(uint64_t region, bool act, bool warming_up, DecisionCounts& decisions,
                           const Advice& advice, Outcome& out) {
  // A run of regions with one owner has moved to one node: the first pass
  // of a sweep visits one pair of regions in four (ScanControl), so two
  // such visits a few regions apart that moved to the same node for the
  // same owner speak for the regions between them, which move now rather
  // than when the sweep's later passes reach them; those visits verify
  // them. Off for this VM once they were contradicted more than one time
  // in nine (memory whose owners alternate at a finer grain than a pass).
  if (!BracketsTrusted()) return;
  RegionState& r = regions_.at(region);
  if (r.flags & (RegionState::kSplit | RegionState::kMisled)) return;
  const uint8_t owner = VcpuOwner(region);
  const std::optional<uint64_t> b = Bracket(region, r.node, owner == kNoOwner ? -1 : owner);
  if (!b || *b + 1 >= region) return;
  const int chain = std::max(regions_.at(*b).chain, r.chain) + 1;
  if (chain > kMaxWitnessChain) return;
  uint64_t inferred = 0;
  for (uint64_t i = *b + 1; i < region; ++i) {
    RegionState& s = regions_.at(i);
    if (s.flips != 0 || (s.settled() && s.node == r.node) ||
        (s.flags & (RegionState::kSplit | RegionState::kMisled | RegionState::kQueued))) {
      continue;
    }
    TakeWord(i, r.node, chain, owner_[region], (r.flags & RegionState::kGroupOwned) != 0);
    ++decisions[Decision::kRegionBracket];
    ++out.wanted;
    ++inferred;
    if (!warming_up) Send(i, -1, r.node, "region-bracket", act, advice);
  }
  // While this VM's brackets have few checks behind them, one of the
  // regions is visited at once: a word that does not hold is found out
  // before the pass has carried it much further. Later the sweep's later
  // passes check them (a visit at once costs a call of its own, and calls
  // are what the scan pays for where arming is dear).
  if (inferred > 0 && brackets_borne_out_ < kCheckedAtOnce) {
    out.revisit.push_back((*b + region) / 2);
  }
}

uint64_t RegionBalancer::Follow(int vcpu, int node, bool act, DecisionCounts& decisions,
                                const Advice& advice, uint64_t* retargeted) {
  return FollowRegions(vcpu, false, node, /*stay=*/0, act, decisions, advice, retargeted);
}

uint64_t RegionBalancer::FollowGroup(int group, int node, uint64_t stay, bool act,
                                     DecisionCounts& decisions, const Advice& advice,
                                     uint64_t* retargeted) {
  return FollowRegions(group, true, node, stay, act, decisions, advice, retargeted);
}

uint64_t RegionBalancer::FollowRegions(int who, bool group, int node, uint64_t stay, bool act,
                                       DecisionCounts& decisions, const Advice& advice,
                                       uint64_t* retargeted) {
  if (who < 0 || who >= kNoOwner || node < 0 || node >= RegionState::kNoNode || node >= 64) {
    return 0;
  }
  stay |= 1ull << node;
  const bool on_word = BracketsTrusted();
  uint64_t followed = 0;
  std::optional<uint64_t> last;  // the last region that followed, in this call
  for (uint64_t r = 0; r < owner_.size(); ++r) {
    if (owner_[r] != who) continue;
    RegionState& state = regions_.at(r);
    if (((state.flags & RegionState::kGroupOwned) != 0) != group) continue;
    if ((state.flags & RegionState::kSplit) ||
        (state.node < 64 && ((stay >> state.node) & 1) != 0)) {
      continue;
    }
    int from = state.node;
    if (!state.settled()) {
      if (state.node == RegionState::kNoNode || state.flips != 0) continue;
      state.node = static_cast<uint8_t>(node);
      if (!on_word || (state.flags & RegionState::kMisled)) {
        // On its way to settling for the vCPU's old node: its next visit,
        // which will want the new one, agrees instead of changing its mind.
        if (retargeted != nullptr) ++*retargeted;
        continue;
      }
      // Its one visit was `who`'s alone, and `who` has moved since: it
      // goes along now, on that visit's word, as a bracketed region does
      // (its next visit bears the word out or contradicts it, and a
      // contradicted word counts against this VM's brackets), rather than
      // a visit later - a sweep later where the scan is slow (the NUMA
      // lab's burst of first samples gives every region one visit while
      // all vCPUs run on one node; at its pace a second visit of each came
      // 20-60 s after the cpuset widened).
      from = -1;
      TakeWord(r, node, /*chain=*/1, static_cast<uint8_t>(who), group);
    } else {
      // Not a change of mind (flips stay as they are): its owner moved.
      state.node = static_cast<uint8_t>(node);
      state.flags &= static_cast<uint8_t>(~RegionState::kPlaced);
    }
    if (on_word && last && r - *last > 1 && r - *last <= kBracketSpan) {
      followed += Carry(*last, r, who, group, node, act, decisions, advice);
    }
    last = r;
    ++decisions[Decision::kRegionFollow];
    ++followed;
    Send(r, from, node, "region-follow", act, advice);
  }
  return followed;
}

uint64_t RegionBalancer::Carry(uint64_t a, uint64_t b, int who, bool group, int node, bool act,
                               DecisionCounts& decisions, const Advice& advice) {
  // The scan's visits so far may have left gaps in `who`'s run (a coarse
  // pass visits one pair of regions in four): regions nobody owns between
  // two that followed go with them, on their word, as a bracket's do.
  for (uint64_t i = a + 1; i < b; ++i) {
    if (owner_[i] != kNoOwner && owner_[i] != who) return 0;  // someone else's in between
  }
  uint64_t carried = 0;
  for (uint64_t i = a + 1; i < b; ++i) {
    RegionState& s = regions_.at(i);
    if (owner_[i] != kNoOwner || s.settled() || s.flips != 0 ||
        (s.flags & (RegionState::kSplit | RegionState::kMisled | RegionState::kQueued))) {
      continue;
    }
    TakeWord(i, node, /*chain=*/2, static_cast<uint8_t>(who), group);
    ++decisions[Decision::kRegionBracket];
    ++carried;
    Send(i, -1, node, "region-bracket", act, advice);
  }
  return carried;
}

void RegionBalancer::TakeWord(uint64_t r, int node, int chain, uint8_t owner, bool group) {
  RegionState& s = regions_.at(r);
  s.node = static_cast<uint8_t>(node);
  s.votes = 2;
  s.chain = static_cast<uint8_t>(chain);
  s.flags = static_cast<uint8_t>(
      (s.flags & ~(RegionState::kPlaced | RegionState::kStale | RegionState::kGroupOwned)) |
      RegionState::kBracket | (group ? RegionState::kGroupOwned : 0));
  owner_[r] = owner;
  moved_lately_[r] = decides_;
}

void RegionBalancer::Send(uint64_t r, int from, int node, const char* reason, bool act,
                          const Advice& advice) {
  if (advice) advice(r * kRegionPages, kRegionPages, from, node, reason);
  if (act) moves_.Push(regions_.at(r), {r, -1}, 1ull << node);
}

uint64_t RegionBalancer::AgeVotes() {
  uint64_t aged = 0;
  for (uint64_t r = 0; r < regions_.size(); ++r) {
    RegionState& state = regions_.at(r);
    if (VcpuOwner(r) != kNoOwner || (state.flags & RegionState::kSplit) || state.settled() ||
        state.votes == 0 || state.flips != 0) {
      continue;
    }
    state.flags |= RegionState::kStale;
    ++aged;
  }
  return aged;
}

uint64_t RegionBalancer::ForgetDisagreement() {
  uint64_t forgotten = 0;
  for (uint64_t r = 0; r < regions_.size(); ++r) {
    RegionState& state = regions_.at(r);
    if (state.settled() || state.flips == 0) continue;
    if (state.flags & RegionState::kSplit) {
      split_.erase(r);
      state.flags &= static_cast<uint8_t>(~RegionState::kSplit);
    }
    state.node = RegionState::kNoNode;
    state.votes = 0;
    state.flips = 0;
    state.chain = 0;
    state.flags &=
        static_cast<uint8_t>(~(RegionState::kPlaced | RegionState::kStale | RegionState::kMisled));
    ++forgotten;
  }
  return forgotten;
}

bool RegionBalancer::Decided(uint64_t gfn) const {
  const uint64_t region = RegionTable::RegionOf(gfn);
  return decided_.contains(Key(region, -1)) ||
         decided_.contains(Key(region, static_cast<int>((gfn % kRegionPages) / kSubRegionPages)));
}

absl::StatusOr<RegionMovesOutcome> RegionBalancer::Drain(
    PlacementView& view, absl::Duration now, const std::function<void(uint64_t)>& moved) {
  return moves_.Drain([this](const RegionMoves::Unit& u) { return StateOf(u); }, view, now, moved);
}

size_t RegionBalancer::memory_bytes() const {
  return regions_.memory_bytes() + owner_.capacity() +
         moved_lately_.capacity() * (sizeof(uint64_t) + sizeof(uint32_t)) + moves_.memory_bytes() +
         split_.size() * (sizeof(uint64_t) + sizeof(std::array<RegionState, kSubRegions>));
}

}  // namespace numavm
