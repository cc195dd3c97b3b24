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

static bool isTransfer(const Item &item) {
  CollectiveKind k = item.instr->collective();
  return k == CollectiveKind::Send || k == CollectiveKind::Recv;
}

int64_t sim::peerOf(const Plan &plan, const Item &item, int64_t rank) {
  const Group &g = plan.groups[size_t(item.instr->group)];
  int64_t color = 0, index = 0;
  g.locate(rank, color, index);
  int64_t peer = item.instr->collective() == CollectiveKind::Send
                     ? item.instr->as<ops::SendAttrs>().peer
                     : item.instr->as<ops::RecvAttrs>().peer;
  return groupMembers(g.gridShape, g.axes, color)[size_t(peer)];
}

/// The world ranks collective `item` on `rank` involves, ascending.
static std::vector<int64_t> placed(const Plan &plan, const Item &item,
                                   int64_t rank) {
  if (isTransfer(item)) {
    int64_t peer = peerOf(plan, item, rank);
    if (peer == rank)
      return {rank};
    return {std::min(rank, peer), std::max(rank, peer)};
  }
  const Group &g = plan.groups[size_t(item.instr->group)];
  int64_t color = 0, index = 0;
  g.locate(rank, color, index);
  return groupMembers(g.gridShape, g.axes, color);
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

  struct StreamState {
    int64_t next = 0;
    bool running = false, arrived = false;
    double remaining = 0, start = 0;
    Instance *instance = nullptr;
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

  double commSeconds(const Plan &plan, const Item &item, int64_t r) const {
    return zeroComm ? 0 : sim::commSeconds(plan, cluster, item, r);
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
    st.running = st.arrived = false;
    st.instance = nullptr;
  }

  /// The instance collective `item` of rank `r` belongs to, made on the
  /// first arrival.
  std::pair<Key, Instance *> instanceOf(int64_t r, const Item &item) {
    const Plan &plan = *programOfRank(r).plan;
    int group = globalGroup[programOf[size_t(r)]][size_t(item.instr->group)];
    Key key;
    int64_t expected = 0;
    if (isTransfer(item)) {
      int64_t peer = peerOf(plan, item, r);
      bool sends = item.instr->collective() == CollectiveKind::Send;
      int64_t from = sends ? r : peer, to = sends ? peer : r;
      key = {1, group, from, to, item.groupSeq};
      expected = (from < ranks) + (to < ranks);
    } else {
      int64_t color = colorOf[size_t(group)][size_t(r)];
      key = {0, group, color, 0, item.groupSeq};
      expected = groupSize[size_t(group)].at(color);
    }
    Instance &inst = instances[key];
    if (!inst.item) {
      inst.expected = expected;
      inst.seconds = commSeconds(plan, item, r);
      inst.item = &item;
      inst.plan = &plan;
    }
    return {key, &inst};
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
          auto [key, inst] = instanceOf(r, item);
          inst->members.push_back({r, s});
          st.arrived = true;
          st.instance = inst;
          if (int64_t(inst->members.size()) < inst->expected)
            break;
          if (inst->seconds <= 0) {
            std::vector<std::pair<int64_t, unsigned>> members = inst->members;
            instances.erase(key);
            for (auto [m, ms] : members)
              finish(m, ms, now, front(m, ms));
            continue;
          }
          inst->running = true;
          inst->remaining = inst->seconds;
          inst->start = now;
          for (auto [m, ms] : inst->members)
            state[size_t(m)][ms].running = true;
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
      for (auto &[key, inst] : instances)
        if (inst.running) {
          anyRunning = true;
          for (auto [m, ms] : inst.members)
            ++commCount[size_t(m)];
        }
      for (int64_t r = 0; r < ranks; ++r)
        for (const StreamState &st : state[size_t(r)])
          if (st.running && !st.instance) {
            computing[size_t(r)] = 1;
            anyRunning = true;
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
          if (st.running && !st.instance)
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
          if (!st.running || st.instance)
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
          for (auto [m, ms] : inst.members)
            finish(m, ms, inst.start, front(m, ms));
          it = instances.erase(it);
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
