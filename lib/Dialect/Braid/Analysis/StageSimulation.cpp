//===- StageSimulation.cpp - do several programs run to their end? --------===//

#include "braid/Dialect/Braid/Analysis/StageSimulation.h"

#include "llvm/ADT/DenseMap.h"

#include <cassert>
#include <map>

using namespace braid;

unsigned StageSimulation::addProgram() {
  programs.emplace_back();
  return unsigned(programs.size() - 1);
}

unsigned StageSimulation::addOp(unsigned program, unsigned stream,
                                llvm::ArrayRef<unsigned> deps, bool ordered) {
  std::vector<Op> &ops = programs[program];
  ops.push_back({stream, llvm::SmallVector<unsigned, 2>(deps), ordered, {}});
  return unsigned(ops.size() - 1);
}

void StageSimulation::addExchange(llvm::ArrayRef<OpRef> members) {
  for (const OpRef &m : members)
    programs[m.program][m.op].exchanges.push_back(unsigned(exchanges.size()));
  exchanges.emplace_back(members);
}

llvm::SmallVector<StageSimulation::Link> StageSimulation::run() const {
  size_t n = programs.size();
  std::vector<std::vector<char>> started(n), done(n);
  std::vector<char> complete(exchanges.size(), 0);
  auto allComplete = [&](const Op &op) {
    for (unsigned x : op.exchanges)
      if (!complete[x])
        return false;
    return true;
  };
  // Per program: its streams' ops in order, the next op of each, and the
  // ordered op before each ordered op.
  std::vector<std::map<unsigned, std::vector<unsigned>>> streams(n);
  std::vector<std::map<unsigned, size_t>> next(n);
  std::vector<std::vector<int>> prevOrdered(n);
  for (size_t p = 0; p < n; ++p) {
    started[p].assign(programs[p].size(), 0);
    done[p].assign(programs[p].size(), 0);
    int last = -1;
    for (auto [i, op] : llvm::enumerate(programs[p])) {
      streams[p][op.stream].push_back(unsigned(i));
      prevOrdered[p].push_back(op.ordered ? last : -1);
      if (op.ordered)
        last = int(i);
    }
    for (auto &[s, ops] : streams[p])
      next[p][s] = 0;
  }
  auto canStart = [&](size_t p, unsigned i) {
    const Op &op = programs[p][i];
    for (unsigned d : op.deps)
      if (!done[p][d])
        return false;
    int before = prevOrdered[p][i];
    return before < 0 || started[p][before];
  };

  for (bool moved = true; moved;) {
    moved = false;
    for (size_t p = 0; p < n; ++p) {
      for (auto &[s, ops] : streams[p]) {
        size_t &at = next[p][s];
        while (at < ops.size()) {
          unsigned i = ops[at];
          if (!started[p][i]) {
            if (!canStart(p, i))
              break;
            started[p][i] = 1;
            moved = true;
            for (unsigned x : programs[p][i].exchanges) {
              bool all = true;
              for (const OpRef &m : exchanges[x])
                all &= bool(started[m.program][m.op]);
              if (!all)
                continue;
              complete[x] = 1;
              for (const OpRef &m : exchanges[x])
                if (allComplete(programs[m.program][m.op]))
                  done[m.program][m.op] = 1;
            }
            if (allComplete(programs[p][i]))
              done[p][i] = 1;
          }
          if (!done[p][i])
            break;
          ++at;
          moved = true;
        }
      }
    }
  }

  // Not finished: follow from a blocked op what each waits for; the walk
  // meets an op twice, and from there on it is a cycle.
  auto waitsFor = [&](OpRef r) -> Link {
    const Op &op = programs[r.program][r.op];
    if (started[r.program][r.op]) {
      for (unsigned x : op.exchanges)
        for (const OpRef &m : exchanges[x])
          if (!started[m.program][m.op])
            return {m, Wait::Exchange};
    }
    const std::vector<unsigned> &ops = streams[r.program].at(op.stream);
    unsigned head = ops[next[r.program].at(op.stream)];
    if (head != r.op)
      return {{r.program, head}, Wait::Stream};
    for (unsigned d : op.deps)
      if (!done[r.program][d])
        return {{r.program, d}, Wait::Operand};
    int before = prevOrdered[r.program][r.op];
    assert(before >= 0 && !started[r.program][before] &&
           "a blocked op waits for something");
    return {{r.program, unsigned(before)}, Wait::Order};
  };
  for (size_t p = 0; p < n; ++p) {
    for (auto &[s, ops] : streams[p]) {
      if (next[p][s] == ops.size())
        continue;
      std::vector<Link> walk;
      std::map<std::pair<unsigned, unsigned>, size_t> seen;
      OpRef at{unsigned(p), ops[next[p][s]]};
      while (!seen.count({at.program, at.op})) {
        seen[{at.program, at.op}] = walk.size();
        Link link = waitsFor(at);
        walk.push_back({at, link.waits});
        at = link.op;
      }
      return llvm::SmallVector<Link>(walk.begin() + seen[{at.program, at.op}],
                                     walk.end());
    }
  }
  return {};
}
