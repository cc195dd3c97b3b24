//===- SimPlayer.cpp - a recorded step played on every rank ---------------===//

#include "SimPlayer.h"

#include "braid-common/DeviceGroup.h"
#include "braid-runtime/Executor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

using namespace braid;
using namespace braid::rt;
using namespace braid::rt::sim;
using namespace braid::cost;

/// The world rank that rank `rank` names as `peer` of `item`'s group.
static int64_t worldPeer(const Plan &plan, const Item &item, int64_t rank,
                         int64_t peer) {
  const Group &g = plan.groups[size_t(item.instr->group)];
  int64_t color = 0, index = 0;
  g.locate(rank, color, index);
  return groupMembers(g.gridShape, g.axes, color)[size_t(peer)];
}

/// The transfers item `item` of rank `r` takes part in: a send or a
/// receive is one, a send-receive one per tensor (its sends, then its
/// receives).
namespace {
struct Half {
  int64_t from, to, seq;
  uint64_t bytes;
};
} // namespace
static std::vector<Half> halvesOf(const Plan &plan, const Item &item,
                                  int64_t r) {
  const Instr &instr = *item.instr;
  switch (instr.collective()) {
  case CollectiveKind::Send:
    return {{r, worldPeer(plan, item, r, instr.as<ops::SendAttrs>().peer),
             item.groupSeq, item.commBytes}};
  case CollectiveKind::Recv:
    return {{worldPeer(plan, item, r, instr.as<ops::RecvAttrs>().peer), r,
             item.groupSeq, item.commBytes}};
  case CollectiveKind::SendRecv: {
    const auto &a = instr.as<ops::SendRecvAttrs>();
    std::vector<Half> halves;
    int64_t to = worldPeer(plan, item, r, a.send_peer),
            from = worldPeer(plan, item, r, a.recv_peer);
    for (size_t i = 0; i < instr.operands.size(); ++i)
      halves.push_back({r, to, item.groupSeq + int64_t(i),
                        plan.buffers[instr.operands[i]].bytes});
    for (size_t i = 0; i < instr.results.size(); ++i)
      halves.push_back({from, r, item.recvSeq + int64_t(i),
                        plan.buffers[instr.results[i]].bytes});
    return halves;
  }
    // The group collectives have no halves (every kind a case: a new
    // point-to-point kind must say what it moves).
    BRAID_CASE_NOT_POINT_TO_POINT_KINDS
    return {};
  }
  return {};
}

/// The world ranks collective `item` on `rank` involves, ascending.
static std::vector<int64_t> placed(const Plan &plan, const Item &item,
                                   int64_t rank) {
  std::vector<Half> halves = halvesOf(plan, item, rank);
  if (!halves.empty()) {
    std::vector<int64_t> ranks{rank};
    for (const Half &h : halves)
      ranks.push_back(h.from == rank ? h.to : h.from);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    return ranks;
  }
  const Group &g = plan.groups[size_t(item.instr->group)];
  int64_t color = 0, index = 0;
  g.locate(rank, color, index);
  return groupMembers(g.gridShape, g.axes, color);
}

/// The uncontended seconds of one transfer of `bytes` between two ranks.
static double transferSeconds(const Cluster &cluster, const Half &h) {
  std::vector<int64_t> pair{std::min(h.from, h.to), std::max(h.from, h.to)};
  if (h.from == h.to)
    pair.pop_back();
  return collectiveSeconds(cluster, CollectiveKind::Send, h.bytes,
                           groupShapeOf(cluster, pair));
}

double sim::commSeconds(const Plan &plan, const Cluster &cluster,
                        const Item &item, int64_t rank) {
  return collectiveSeconds(cluster, item.instr->collective(), item.commBytes,
                           groupShapeOf(cluster, placed(plan, item, rank)));
}

const char *sim::commAlgorithm(const Plan &plan, const Cluster &cluster,
                               const Item &item, int64_t rank) {
  return collectiveAlgorithm(cluster, item.instr->collective(), item.commBytes,
                             groupShapeOf(cluster, placed(plan, item, rank)));
}

namespace {

/// One playing of the recorded programs.
struct Player {
  const std::vector<Program> &programs;
  const std::vector<uint32_t> &programOf;
  const Cluster &cluster;
  int64_t ranks;
  bool zeroComm, contention;
  bool recordTrace = false;
  int64_t traceRanks = 0;

  /// The device groups of all programs as one list (a program's group
  /// index maps into it by grid and axes), each rank's color in each.
  std::vector<std::vector<int>> globalGroup;         // [program][group]
  std::vector<std::vector<int64_t>> colorOf;         // [global group][rank]
  std::vector<std::map<int64_t, int64_t>> groupSize; // [global group][color]

  /// A collective being gathered or run: the (rank, stream) of each
  /// member that has arrived, and how many it waits for.
  struct Instance {
    std::vector<std::pair<int64_t, unsigned>> members;
    int64_t expected = 0;
    bool running = false;
    double remaining = 0, seconds = 0, start = 0;
    const Item *item = nullptr;
    const Plan *plan = nullptr;
  };
  /// (0, group, color, seq) for a group's collective; (1, group, sender,
  /// receiver, seq) for a transfer.
  using Key = std::tuple<int, int, int64_t, int64_t, int64_t>;
  std::map<Key, Instance> instances;

  /// A stream's front item: a kernel running, or a collective that has
  /// arrived at its instances (a send-receive at two) and ends when the
  /// last of them does.
  struct StreamState {
    int64_t next = 0;
    bool running = false, arrived = false, comm = false;
    double remaining = 0, start = 0;
    /// A collective's instances not yet ended, and those running.
    int open = 0, runningHalves = 0;
  };
  std::vector<std::vector<StreamState>> state; // [rank][stream]

  // Rank 0's figures.
  double now = 0, exposed = 0, commWall = 0;
  std::vector<double> startOf0; // rank 0, flattened (stream, index)
  std::vector<size_t> offsets;
  std::vector<double> busy;
  std::vector<TraceEvent> trace;

  Player(const std::vector<Program> &programs,
         const std::vector<uint32_t> &programOf, const Cluster &cluster,
         int64_t ranks, bool zeroComm, bool contention)
      : programs(programs), programOf(programOf), cluster(cluster),
        ranks(ranks), zeroComm(zeroComm), contention(contention) {
    std::map<std::pair<std::string, std::vector<int64_t>>, int> ids;
    for (const Program &p : programs) {
      std::vector<int> local;
      for (const Group &g : p.plan->groups) {
        auto [it, added] =
            ids.try_emplace({g.grid, g.axes}, int(colorOf.size()));
        if (added) {
          std::vector<int64_t> colors(size_t(ranks), 0);
          std::map<int64_t, int64_t> sizes;
          for (int64_t r = 0; r < ranks; ++r) {
            int64_t color = 0, index = 0;
            g.locate(r, color, index);
            colors[size_t(r)] = color;
            ++sizes[color];
          }
          colorOf.push_back(std::move(colors));
          groupSize.push_back(std::move(sizes));
        }
        local.push_back(it->second);
      }
      globalGroup.push_back(std::move(local));
    }
    state.resize(size_t(ranks));
    for (int64_t r = 0; r < ranks; ++r)
      state[size_t(r)].resize(itemsOf(r).size());
    size_t total = 0;
    for (const auto &s : itemsOf(0)) {
      offsets.push_back(total);
      total += s.size();
    }
    startOf0.assign(total, 0);
    busy.assign(size_t(ranks), 0);
  }

  const Program &programOfRank(int64_t r) const {
    return programs[programOf[size_t(r)]];
  }
  const std::vector<std::vector<Item>> &itemsOf(int64_t r) const {
    return programOfRank(r).streams;
  }

  bool depsDone(int64_t r, const Item &item) const {
    for (const Pos &d : item.deps)
      if (state[size_t(r)][d.stream].next <= d.index)
        return false;
    return true;
  }

  void finish(int64_t r, unsigned s, double start, const Item &item) {
    StreamState &st = state[size_t(r)][s];
    if (r == 0)
      startOf0[offsets[s] + size_t(st.next)] = start;
    if (recordTrace && r < traceRanks)
      trace.push_back({r, s, &item, start, now,
                       item.comm ? sim::commAlgorithm(*programOfRank(r).plan,
                                                      cluster, item, r)
                                 : ""});
    ++st.next;
    st = StreamState{st.next};
  }

  /// Instance member (r, s) has seen its instance end at `now`.
  void release(int64_t r, unsigned s, bool wasRunning) {
    StreamState &st = state[size_t(r)][s];
    if (wasRunning)
      --st.runningHalves;
    if (--st.open == 0)
      finish(r, s, st.running ? st.start : now, front(r, s));
  }

  void startInstance(Instance &inst) {
    inst.running = true;
    inst.remaining = inst.seconds;
    inst.start = now;
    for (auto [m, ms] : inst.members) {
      StreamState &st = state[size_t(m)][ms];
      if (!st.running)
        st.start = now;
      st.running = true;
      ++st.runningHalves;
    }
  }

  /// The instances collective `item` of rank `r` belongs to (a
  /// send-receive's two: one per transfer), each made on its first
  /// arrival.
  std::vector<std::pair<Key, Instance *>> instancesOf(int64_t r,
                                                      const Item &item) {
    const Plan &plan = *programOfRank(r).plan;
    int group = globalGroup[programOf[size_t(r)]][size_t(item.instr->group)];
    std::vector<std::pair<Key, Instance *>> found;
    auto get = [&](const Key &key, int64_t expected, auto seconds) {
      Instance &inst = instances[key];
      if (!inst.item) {
        inst.expected = expected;
        inst.seconds = zeroComm ? 0 : seconds();
        inst.item = &item;
        inst.plan = &plan;
      }
      found.push_back({key, &inst});
    };
    std::vector<Half> halves = halvesOf(plan, item, r);
    for (const Half &h : halves)
      get({1, group, h.from, h.to, h.seq}, (h.from < ranks) + (h.to < ranks),
          [&] { return transferSeconds(cluster, h); });
    if (halves.empty()) {
      int64_t color = colorOf[size_t(group)][size_t(r)];
      get({0, group, color, 0, item.groupSeq},
          groupSize[size_t(group)].at(color),
          [&] { return sim::commSeconds(plan, cluster, item, r); });
    }
    return found;
  }

  /// Starts what can start; true if anything did.
  bool startReady() {
    bool any = false;
    for (int64_t r = 0; r < ranks; ++r) {
      const auto &items = itemsOf(r);
      for (unsigned s = 0; s < items.size(); ++s) {
        for (;;) {
          StreamState &st = state[size_t(r)][s];
          if (st.running || st.arrived || st.next >= int64_t(items[s].size()))
            break;
          const Item &item = items[s][size_t(st.next)];
          if (!depsDone(r, item))
            break;
          any = true;
          if (!item.comm) {
            if (item.seconds <= 0) {
              finish(r, s, now, item);
              continue;
            }
            st.running = true;
            st.remaining = item.seconds;
            st.start = now;
            break;
          }
          auto halves = instancesOf(r, item);
          st.arrived = st.comm = true;
          st.open = int(halves.size());
          int64_t at = st.next;
          for (auto [key, inst] : halves) {
            inst->members.push_back({r, s});
            if (int64_t(inst->members.size()) < inst->expected)
              continue;
            if (inst->seconds <= 0) {
              std::vector<std::pair<int64_t, unsigned>> members = inst->members;
              instances.erase(key);
              for (auto [m, ms] : members)
                release(m, ms, false);
              continue;
            }
            startInstance(*inst);
          }
          if (state[size_t(r)][s].next == at)
            break;
        }
      }
    }
    return any;
  }

  /// The item at the front of stream `s` of rank `r`.
  const Item &front(int64_t r, unsigned s) const {
    return itemsOf(r)[s][size_t(state[size_t(r)][s].next)];
  }

  void run() {
    std::vector<int64_t> commCount(static_cast<size_t>(ranks), 0);
    std::vector<char> computing(static_cast<size_t>(ranks), 0);
    for (;;) {
      while (startReady()) {
      }
      // Rates.
      std::fill(commCount.begin(), commCount.end(), 0);
      std::fill(computing.begin(), computing.end(), 0);
      bool anyRunning = false;
      // A rank's communication load is its streams with a transfer or
      // collective running (a send-receive's halves share one stream and
      // go opposite ways: one load).
      for (int64_t r = 0; r < ranks; ++r)
        for (const StreamState &st : state[size_t(r)]) {
          if (st.runningHalves > 0) {
            ++commCount[size_t(r)];
            anyRunning = true;
          }
          if (st.running && !st.comm) {
            computing[size_t(r)] = 1;
            anyRunning = true;
          }
        }
      if (!anyRunning) {
        for (int64_t r = 0; r < ranks; ++r)
          for (unsigned s = 0; s < state[size_t(r)].size(); ++s)
            if (state[size_t(r)][s].next < int64_t(itemsOf(r)[s].size()))
              throw CommError("the simulation stalled: rank " +
                              std::to_string(r) + " waits at " +
                              front(r, s).instr->describe() +
                              " for ranks that never reach it");
        return;
      }
      double a = contention ? cluster.computeSlowdownDuringComm : 0;
      double b = contention ? cluster.commSlowdownDuringCompute : 0;
      auto workRate = [&](int64_t r) {
        return commCount[size_t(r)] ? 1 / (1 + a) : 1.0;
      };
      auto instRate = [&](const Instance &inst) {
        double rate = 1;
        for (auto [m, ms] : inst.members)
          rate = std::min(rate, 1 / (double(commCount[size_t(m)]) *
                                     (1 + (computing[size_t(m)] ? b : 0))));
        return rate;
      };
      double dt = INFINITY;
      for (int64_t r = 0; r < ranks; ++r)
        for (const StreamState &st : state[size_t(r)])
          if (st.running && !st.comm)
            dt = std::min(dt, st.remaining / workRate(r));
      for (auto &[key, inst] : instances)
        if (inst.running)
          dt = std::min(dt, inst.remaining / instRate(inst));
      if (commCount[0]) {
        commWall += dt;
        if (!computing[0])
          exposed += dt;
      }
      for (int64_t r = 0; r < ranks; ++r)
        if (computing[size_t(r)])
          busy[size_t(r)] += dt;
      now += dt;
      auto ends = [&](double remaining, double rate) {
        return remaining / rate <= dt * (1 + 1e-12) + 1e-18;
      };
      for (int64_t r = 0; r < ranks; ++r)
        for (unsigned s = 0; s < state[size_t(r)].size(); ++s) {
          StreamState &st = state[size_t(r)][s];
          if (!st.running || st.comm)
            continue;
          double rate = workRate(r);
          if (ends(st.remaining, rate))
            finish(r, s, st.start, front(r, s));
          else
            st.remaining -= rate * dt;
        }
      for (auto it = instances.begin(); it != instances.end();) {
        Instance &inst = it->second;
        if (!inst.running) {
          ++it;
          continue;
        }
        double rate = instRate(inst);
        if (ends(inst.remaining, rate)) {
          std::vector<std::pair<int64_t, unsigned>> members = inst.members;
          it = instances.erase(it);
          for (auto [m, ms] : members)
            release(m, ms, true);
        } else {
          inst.remaining -= rate * dt;
          ++it;
        }
      }
    }
  }
};

} // namespace

PlayResult sim::play(const std::vector<Program> &programs,
                     const std::vector<uint32_t> &programOf,
                     const Cluster &cluster, int64_t ranks, bool zeroComm,
                     bool contention, int64_t traceRanks) {
  Player player(programs, programOf, cluster, ranks, zeroComm, contention);
  player.recordTrace = traceRanks > 0;
  player.traceRanks = traceRanks;
  player.run();
  PlayResult result;
  result.now = player.now;
  result.exposed = player.exposed;
  result.commWall = player.commWall;
  result.startOf0 = std::move(player.startOf0);
  result.offsets = std::move(player.offsets);
  result.busy = std::move(player.busy);
  result.trace = std::move(player.trace);
  return result;
}
