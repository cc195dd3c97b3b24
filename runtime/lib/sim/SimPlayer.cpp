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

double sim::commSeconds(const Plan &plan, const Cluster &cluster,
                        const Item &item, int64_t color) {
  // The shape on the whole cluster: the group's world ranks.
  const Group &g = plan.groups[size_t(item.instr->group)];
  return collectiveSeconds(
      cluster, item.instr->collective(), item.commBytes,
      groupShapeOf(cluster, groupMembers(g.gridShape, g.axes, color)));
}

const char *sim::commAlgorithm(const Plan &plan, const Cluster &cluster,
                               const Item &item, int64_t color) {
  const Group &g = plan.groups[size_t(item.instr->group)];
  return collectiveAlgorithm(
      cluster, item.instr->collective(), item.commBytes,
      groupShapeOf(cluster, groupMembers(g.gridShape, g.axes, color)));
}

int64_t sim::colorOf(const Plan &plan, int group, int64_t rank) {
  int64_t color = 0, index = 0;
  plan.groups[size_t(group)].locate(rank, color, index);
  return color;
}

namespace {

/// One playing of the recorded step.
struct Player {
  const Plan &plan;
  const Cluster &cluster;
  const std::vector<std::vector<Item>> &items;
  int64_t ranks;
  bool zeroComm, contention;
  bool recordTrace = false;
  int64_t traceRanks = 0;

  // Per group: each rank's color, the members of each color, the shapes.
  std::vector<std::vector<int64_t>> colorOf;
  std::vector<std::map<int64_t, std::vector<int64_t>>> members;

  struct Instance {
    std::vector<std::pair<int64_t, unsigned>> members; // (rank, stream)
    int64_t arrived = 0;
    bool running = false;
    double remaining = 0, seconds = 0, start = 0;
    const Item *item = nullptr;
  };
  std::map<std::tuple<int, int64_t, unsigned, int64_t>, Instance> instances;

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
  std::vector<TraceEvent> trace;

  Player(const Plan &plan, const Cluster &cluster,
         const std::vector<std::vector<Item>> &items, int64_t ranks,
         bool zeroComm, bool contention)
      : plan(plan), cluster(cluster), items(items), ranks(ranks),
        zeroComm(zeroComm), contention(contention) {
    for (const Group &g : plan.groups) {
      std::vector<int64_t> colors(size_t(ranks), 0);
      std::map<int64_t, std::vector<int64_t>> byColor;
      for (int64_t r = 0; r < ranks; ++r) {
        int64_t color = 0, index = 0;
        g.locate(r, color, index);
        colors[size_t(r)] = color;
        byColor[color].push_back(r);
      }
      colorOf.push_back(std::move(colors));
      members.push_back(std::move(byColor));
    }
    state.assign(size_t(ranks), std::vector<StreamState>(items.size()));
    size_t total = 0;
    for (const auto &s : items) {
      offsets.push_back(total);
      total += s.size();
    }
    startOf0.assign(total, 0);
  }

  bool depsDone(int64_t r, const Item &item) const {
    for (const Pos &d : item.deps)
      if (state[size_t(r)][d.stream].next <= d.index)
        return false;
    return true;
  }

  double commSeconds(const Item &item, int64_t color) const {
    return zeroComm ? 0 : sim::commSeconds(plan, cluster, item, color);
  }

  void finish(int64_t r, unsigned s, double start, const Item &item) {
    StreamState &st = state[size_t(r)][s];
    if (r == 0)
      startOf0[offsets[s] + size_t(st.next)] = start;
    if (recordTrace && r < traceRanks)
      trace.push_back({r, s, &item, start, now,
                       item.comm
                           ? sim::commAlgorithm(
                                 plan, cluster, item,
                                 colorOf[size_t(item.instr->group)][size_t(r)])
                           : ""});
    ++st.next;
    st.running = st.arrived = false;
    st.instance = nullptr;
  }

  /// Starts what can start; true if anything did.
  bool startReady() {
    bool any = false;
    for (int64_t r = 0; r < ranks; ++r)
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
          int group = item.instr->group;
          int64_t color = colorOf[size_t(group)][size_t(r)];
          auto key = std::make_tuple(group, color, s, item.groupSeq);
          Instance &inst = instances[key];
          if (inst.members.empty()) {
            for (int64_t m : members[size_t(group)][color])
              inst.members.push_back({m, s});
            inst.seconds = commSeconds(item, color);
            inst.item = &item;
          }
          st.arrived = true;
          st.instance = &inst;
          if (++inst.arrived < int64_t(inst.members.size()))
            break;
          if (inst.seconds <= 0) {
            for (auto [m, ms] : inst.members)
              finish(m, ms, now, item);
            instances.erase(key);
            continue;
          }
          inst.running = true;
          inst.remaining = inst.seconds;
          inst.start = now;
          for (auto [m, ms] : inst.members)
            state[size_t(m)][ms].running = true;
          break;
        }
      }
    return any;
  }

  void run() {
    std::vector<int64_t> commCount{std::vector<int64_t>(size_t(ranks))};
    std::vector<char> computing{std::vector<char>(size_t(ranks))};
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
        for (unsigned s = 0; s < items.size(); ++s) {
          const StreamState &st = state[size_t(r)][s];
          if (st.running && !st.instance) {
            computing[size_t(r)] = 1;
            anyRunning = true;
          }
        }
      if (!anyRunning) {
        for (int64_t r = 0; r < ranks; ++r)
          for (unsigned s = 0; s < items.size(); ++s)
            if (state[size_t(r)][s].next < int64_t(items[s].size()))
              throw CommError(
                  "the simulation stalled: rank " + std::to_string(r) +
                  " waits at " +
                  items[s][size_t(state[size_t(r)][s].next)].instr->describe() +
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
        for (unsigned s = 0; s < items.size(); ++s) {
          const StreamState &st = state[size_t(r)][s];
          if (st.running && !st.instance)
            dt = std::min(dt, st.remaining / workRate(r));
        }
      for (auto &[key, inst] : instances)
        if (inst.running)
          dt = std::min(dt, inst.remaining / instRate(inst));
      if (commCount[0]) {
        commWall += dt;
        if (!computing[0])
          exposed += dt;
      }
      now += dt;
      auto ends = [&](double remaining, double rate) {
        return remaining / rate <= dt * (1 + 1e-12) + 1e-18;
      };
      for (int64_t r = 0; r < ranks; ++r)
        for (unsigned s = 0; s < items.size(); ++s) {
          StreamState &st = state[size_t(r)][s];
          if (!st.running || st.instance)
            continue;
          double rate = workRate(r);
          if (ends(st.remaining, rate))
            finish(r, s, st.start, items[s][size_t(st.next)]);
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
            finish(m, ms, inst.start, *inst.item);
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

PlayResult sim::play(const Plan &plan, const Cluster &cluster,
                     const std::vector<std::vector<Item>> &items, int64_t ranks,
                     bool zeroComm, bool contention, int64_t traceRanks) {
  Player player(plan, cluster, items, ranks, zeroComm, contention);
  player.recordTrace = traceRanks > 0;
  player.traceRanks = traceRanks;
  player.run();
  PlayResult result;
  result.now = player.now;
  result.exposed = player.exposed;
  result.commWall = player.commWall;
  result.startOf0 = std::move(player.startOf0);
  result.offsets = std::move(player.offsets);
  result.trace = std::move(player.trace);
  return result;
}
