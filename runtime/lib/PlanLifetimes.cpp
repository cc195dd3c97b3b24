//===- PlanLifetimes.cpp - ordered reads, no two live buffers share a byte ===//
//
// The loader's half of braid-verify-schedule's stream and memory checks: a
// plan that reads a buffer another stream writes without an event or wait
// between them, or whose buffers overlap while both hold a value, would run
// and compute a wrong result, so it is refused before it runs. Each buffer
// holds one value, written by one instruction. The
// lifetimes are the ones braid-plan-memory documents, recomputed from the
// plan's streams (docs/PlanFormat.md, "Lifetimes"):
//   - positions are those of the compute stream's instructions, in order;
//   - a buffer lives from the instruction that writes it to its last reader;
//     arguments and returned buffers for the whole step;
//   - an operand of a collective start until its wait (the whole step if the
//     wait is off the compute stream); a wait's results from their start on;
//   - a buffer written or read off the compute stream for the whole step.
// A buffer may share its bytes only with the operand it is written over in
// place (an optimizer update's, an all-reduce's), at exactly the same bytes,
// and only if every other reader of that operand is ordered before the
// write: earlier on the compute stream, or, for a write on a communication
// stream, before an event that stream waits for; or with the operand it is
// a view of (reshape, Braid_View), at exactly its bytes, the two then being
// one value whose readers an in-place write over either waits for.
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace braid;
using namespace braid::rt;

namespace {

/// Where an instruction is: its stream and its index there.
struct Site {
  size_t stream = 0, index = 0;
};

constexpr size_t kUnset = std::numeric_limits<size_t>::max();

class Lifetimes {
public:
  explicit Lifetimes(const Plan &plan) : plan(plan) {}
  void check();

private:
  const Instr &at(Site s) const {
    return plan.streams[s.stream].instrs[s.index];
  }
  bool onCompute(Site s) const { return !plan.streams[s.stream].comm; }
  /// The compute position of `s` (1-based), or `end` off the compute stream.
  size_t position(Site s) const { return onCompute(s) ? s.index + 1 : end; }
  std::string describe(uint32_t id) const {
    const Buffer &b = plan.buffers[id];
    return "'" + b.name + "' [" + std::to_string(b.offset) + ", " +
           std::to_string(b.offset + b.bytes) + ")";
  }

  void findSites();
  void orderAcrossStreams();
  void checkReads();
  void computeLives();
  void joinInPlace();
  void sweep();

  void write(uint32_t id, size_t begin, size_t last) {
    begins[id] = std::min(begins[id], begin);
    ends[id] = std::max(ends[id], last);
    touched[id] = true;
  }
  void read(uint32_t id, size_t last) {
    ends[id] = std::max(ends[id], last);
    touched[id] = true;
  }
  uint32_t find(uint32_t id) {
    while (leader[id] != id)
      id = leader[id] = leader[leader[id]];
    return id;
  }

  const Plan &plan;
  size_t compute = 0, end = 0;
  std::vector<Site> starts, waits;
  /// Per instruction (by stream, index): for each stream, how many of its
  /// instructions are known to have completed before it begins (a vector
  /// clock; its own stream's entry is its index).
  std::vector<std::vector<std::vector<uint32_t>>> clocks;
  std::vector<size_t> begins, ends;
  std::vector<bool> touched;
  std::vector<uint32_t> leader;
  /// Every instruction that reads each buffer.
  std::vector<std::vector<Site>> readers;
  /// Per buffer: the instruction that writes it (a wait, for a collective's
  /// results), if `written`.
  std::vector<Site> writers;
  std::vector<bool> written;
};

} // namespace

void Lifetimes::findSites() {
  for (size_t s = 0; s < plan.streams.size(); ++s)
    if (!plan.streams[s].comm)
      compute = s;
  end = plan.streams[compute].instrs.size() + 1;
  starts.resize(plan.numFutures);
  waits.resize(plan.numFutures);
  readers.resize(plan.buffers.size());
  writers.resize(plan.buffers.size());
  written.assign(plan.buffers.size(), false);
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t i = 0; i < plan.streams[s].instrs.size(); ++i) {
      const Instr &instr = plan.streams[s].instrs[i];
      if (instr.kind == InstrKind::CollectiveStart)
        starts[size_t(instr.future)] = {s, i};
      if (instr.kind == InstrKind::Wait)
        waits[size_t(instr.future)] = {s, i};
      for (uint32_t id : instr.operands)
        readers[id].push_back({s, i});
    }
  // Each buffer holds one value, written by one instruction (a collective
  // start names the results its wait yields: the wait is their writer).
  std::vector<bool> argument(plan.buffers.size(), false);
  for (const Binding &b : plan.arguments)
    argument[b.buffer] = true;
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t i = 0; i < plan.streams[s].instrs.size(); ++i) {
      const Instr &instr = plan.streams[s].instrs[i];
      if (instr.kind == InstrKind::CollectiveStart)
        continue;
      for (uint32_t id : instr.results) {
        if (argument[id])
          throw PlanError(instr.describe() + " writes " + describe(id) +
                          ", which holds an argument of the step");
        if (written[id])
          throw PlanError(instr.describe() + " writes " + describe(id) +
                          ", which " + at(writers[id]).describe() +
                          " writes too (a buffer holds one value)");
        written[id] = true;
        writers[id] = {s, i};
      }
    }
}

/// What each instruction may rely on having completed on each stream: what
/// precedes it on its own stream, what preceded every event it waits for,
/// and for a wait its collective's start and what preceded that. Streams are
/// walked as the executor may run them (checkProgress has shown that every
/// instruction is reached).
void Lifetimes::orderAcrossStreams() {
  using Clock = std::vector<uint32_t>;
  size_t n = plan.streams.size();
  clocks.resize(n);
  for (size_t s = 0; s < n; ++s)
    clocks[s].resize(plan.streams[s].instrs.size());
  std::vector<Clock> atRecord(plan.numEvents), atStart(plan.numFutures);
  std::vector<bool> recorded(plan.numEvents, false),
      started(plan.numFutures, false);
  std::vector<size_t> next(n, 0);
  auto merge = [](Clock &into, const Clock &from) {
    for (size_t t = 0; t < into.size(); ++t)
      into[t] = std::max(into[t], from[t]);
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t s = 0; s < n; ++s) {
      const std::vector<Instr> &instrs = plan.streams[s].instrs;
      while (next[s] < instrs.size()) {
        size_t i = next[s];
        const Instr &instr = instrs[i];
        if ((instr.kind == InstrKind::WaitEvent && !recorded[instr.event]) ||
            (instr.kind == InstrKind::Wait && !started[instr.future]))
          break;
        Clock clock = i ? clocks[s][i - 1] : Clock(n, 0);
        clock[s] = uint32_t(i);
        if (instr.kind == InstrKind::WaitEvent)
          merge(clock, atRecord[instr.event]);
        if (instr.kind == InstrKind::Wait)
          merge(clock, atStart[instr.future]);
        clocks[s][i] = clock;
        // Past this instruction: it, and what it knew, have completed.
        clock[s] = uint32_t(i + 1);
        if (instr.kind == InstrKind::RecordEvent) {
          recorded[instr.event] = true;
          atRecord[instr.event] = clock;
        }
        if (instr.kind == InstrKind::CollectiveStart) {
          started[instr.future] = true;
          atStart[instr.future] = clock;
        }
        ++next[s];
        moved = true;
      }
    }
  }
}

/// Every read comes after its buffer's write: later on the same stream, or
/// ordered by an event or a wait when the writer runs on another stream.
void Lifetimes::checkReads() {
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t i = 0; i < plan.streams[s].instrs.size(); ++i) {
      const Instr &instr = plan.streams[s].instrs[i];
      for (uint32_t id : instr.operands) {
        if (!written[id])
          continue; // An argument, or never written (read as zeros).
        Site w = writers[id];
        if (w.stream == s ? w.index < i : clocks[s][i][w.stream] > w.index)
          continue;
        throw PlanError(
            instr.describe() + " on stream " + plan.streams[s].name() +
            " reads " + describe(id) + ", which " + at(w).describe() +
            " on stream " + plan.streams[w.stream].name() +
            (w.stream == s ? " writes after it"
                           : " writes with no event or wait ordering it "
                             "before the read"));
      }
    }
}

void Lifetimes::computeLives() {
  size_t n = plan.buffers.size();
  begins.assign(n, kUnset);
  ends.assign(n, 0);
  touched.assign(n, false);
  for (const Binding &b : plan.arguments)
    write(b.buffer, 0, end);
  for (const Binding &b : plan.results)
    read(b.buffer, end);
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t i = 0; i < plan.streams[s].instrs.size(); ++i) {
      const Instr &instr = plan.streams[s].instrs[i];
      Site site{s, i};
      size_t p = position(site);
      bool here = onCompute(site);
      switch (instr.kind) {
      case InstrKind::Kernel:
      case InstrKind::Collective:
        for (uint32_t id : instr.operands)
          read(id, p);
        for (uint32_t id : instr.results)
          write(id, here ? p : 0, p);
        break;
      case InstrKind::CollectiveStart: {
        // Read until the wait; the results are written from the start on.
        Site wait = waits[size_t(instr.future)];
        size_t until = position(wait);
        for (uint32_t id : instr.operands)
          read(id, until);
        for (uint32_t id : instr.results)
          write(id, here ? p : 0, until);
        break;
      }
      case InstrKind::Wait: {
        Site start = starts[size_t(instr.future)];
        for (uint32_t id : instr.results)
          write(id, here ? position(start) : 0, p);
        break;
      }
      case InstrKind::RecordEvent:
      case InstrKind::WaitEvent:
        break;
      }
    }
  for (size_t id = 0; id < n; ++id)
    if (touched[id] && begins[id] == kUnset)
      begins[id] = 0; // Read, never written: as if from the step's start.
}

/// Joins each result written in place over its operand into one class, or
/// refuses the plan if that operand is read after the write.
void Lifetimes::joinInPlace() {
  leader.resize(plan.buffers.size());
  for (uint32_t id = 0; id < leader.size(); ++id)
    leader[id] = id;
  std::vector<bool> returned(plan.buffers.size(), false);
  for (const Binding &b : plan.results)
    returned[b.buffer] = true;
  // A parameter result at its argument's bytes: the buffer that result
  // carries into, by result buffer (a sharded parameter's all-gather writes
  // its argument in place; braid-plan-memory).
  std::vector<int64_t> carriedInto(plan.buffers.size(), -1);
  for (const Binding &r : plan.results)
    for (const Binding &a : plan.arguments)
      if (r.role == Role::Parameter && a.role == r.role && a.name == r.name)
        carriedInto[r.buffer] = a.buffer;
  // Views (reshape) at their operand's exact bytes: one value read through
  // two shapes, one class, and together they are what an in-place write
  // over either must wait for.
  std::vector<uint32_t> viewOf(plan.buffers.size());
  for (uint32_t id = 0; id < viewOf.size(); ++id)
    viewOf[id] = id;
  auto viewRoot = [&](uint32_t id) {
    while (viewOf[id] != id)
      id = viewOf[id] = viewOf[viewOf[id]];
    return id;
  };
  for (const Stream &stream : plan.streams)
    for (const Instr &instr : stream.instrs) {
      if (instr.kind != InstrKind::Kernel || !instr.info ||
          !instr.info->isView || instr.operands.size() != 1 ||
          instr.results.size() != 1)
        continue;
      uint32_t o = instr.operands[0], r = instr.results[0];
      const Buffer &x = plan.buffers[o], &y = plan.buffers[r];
      if (x.offset != y.offset || x.bytes != y.bytes || !x.bytes)
        continue; // A copy: two buffers, checked as such.
      viewOf[viewRoot(r)] = viewRoot(o);
      leader[find(r)] = find(o);
    }
  std::vector<std::vector<uint32_t>> views(plan.buffers.size());
  for (uint32_t id = 0; id < viewOf.size(); ++id)
    if (viewRoot(id) != id)
      views[viewRoot(id)].push_back(id);
  for (uint32_t id = 0; id < viewOf.size(); ++id)
    if (!views[id].empty())
      views[id].push_back(id);
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t i = 0; i < plan.streams[s].instrs.size(); ++i) {
      const Instr &instr = plan.streams[s].instrs[i];
      Site site{s, i};
      std::vector<std::pair<uint32_t, uint32_t>> pairs; // (operand, result)
      if (instr.kind == InstrKind::Kernel && instr.info) {
        for (size_t r = 0; r < instr.info->numInPlace; ++r)
          if (int o = instr.info->inPlace[r];
              o >= 0 && size_t(o) < instr.operands.size() &&
              r < instr.results.size())
            pairs.push_back({instr.operands[size_t(o)], instr.results[r]});
      } else if (instr.collective() == CollectiveKind::AllReduce &&
                 instr.kind != InstrKind::Wait) {
        for (size_t k = 0;
             k < std::min(instr.operands.size(), instr.results.size()); ++k)
          pairs.push_back({instr.operands[k], instr.results[k]});
      } else if (instr.collective() == CollectiveKind::AllGather &&
                 instr.kind != InstrKind::Wait) {
        for (uint32_t r : instr.results)
          if (carriedInto[r] >= 0)
            pairs.push_back({uint32_t(carriedInto[r]), r});
      }
      for (auto [o, r] : pairs) {
        const Buffer &x = plan.buffers[o], &y = plan.buffers[r];
        if (o == r || x.offset != y.offset || x.bytes != y.bytes || !x.bytes)
          continue; // Not in place: two buffers, checked as such.
        size_t known = clocks[s][i][compute];
        auto unordered = [&](Site j) {
          if (j.stream == s && j.index == i)
            return false;
          return !onCompute(j) || j.index + 1 > known;
        };
        // The operand, and the views sharing its bytes.
        const std::vector<uint32_t> &group = views[viewRoot(o)];
        std::vector<uint32_t> sharing =
            group.empty() ? std::vector<uint32_t>{o} : group;
        for (uint32_t shared : sharing) {
          auto late = std::find_if(readers[shared].begin(),
                                   readers[shared].end(), unordered);
          if (late != readers[shared].end())
            throw PlanError(instr.describe() + " writes " + describe(r) +
                            " in place over " + describe(shared) + ", which " +
                            at(*late).describe() +
                            " reads after it or unordered with it");
          if (returned[shared])
            throw PlanError(instr.describe() + " writes " + describe(r) +
                            " in place over " + describe(shared) +
                            ", which the step returns");
        }
        leader[find(r)] = find(o);
      }
    }
}

/// One range per class: its bytes and the union of its members' lives;
/// ranges taken in order of their first position must not meet one still
/// live.
void Lifetimes::sweep() {
  struct Class {
    uint64_t lo, hi;
    size_t begin, end;
    uint32_t member;
  };
  std::map<uint32_t, Class> classes;
  for (uint32_t id = 0; id < plan.buffers.size(); ++id) {
    const Buffer &b = plan.buffers[id];
    if (!touched[id] || !b.bytes)
      continue;
    auto [it, inserted] =
        classes.try_emplace(find(id), Class{b.offset, b.offset + b.bytes,
                                            begins[id], ends[id], id});
    if (!inserted) {
      it->second.begin = std::min(it->second.begin, begins[id]);
      it->second.end = std::max(it->second.end, ends[id]);
    }
  }
  std::vector<Class> order;
  for (auto &entry : classes)
    order.push_back(entry.second);
  std::sort(order.begin(), order.end(), [](const Class &a, const Class &b) {
    return std::tie(a.begin, a.lo) < std::tie(b.begin, b.lo);
  });
  auto when = [&](uint32_t id) -> std::string {
    if (!written[id])
      return "an argument";
    return "written by " + at(writers[id]).describe();
  };
  std::map<uint64_t, Class> active; // by offset, disjoint
  for (const Class &c : order) {
    for (;;) {
      auto it = active.upper_bound(c.lo);
      if (it != active.begin() && std::prev(it)->second.hi > c.lo)
        --it;
      if (it == active.end() || it->first >= c.hi)
        break;
      const Class &o = it->second;
      if (o.end < c.begin) {
        active.erase(it);
        continue;
      }
      throw PlanError("the memory plan puts " + describe(c.member) + " (" +
                      when(c.member) + ") on bytes of " + describe(o.member) +
                      " (" + when(o.member) +
                      ") while both are live: the step would read a value "
                      "that another has overwritten");
    }
    active[c.lo] = c;
  }
}

void Lifetimes::check() {
  findSites();
  orderAcrossStreams();
  checkReads();
  computeLives();
  joinInPlace();
  sweep();
}

void braid::rt::checkLifetimes(const Plan &plan) { Lifetimes(plan).check(); }
