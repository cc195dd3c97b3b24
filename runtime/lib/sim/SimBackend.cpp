//===- SimBackend.cpp - the simulated cluster -----------------------------===//

#include "braid-runtime/SimBackend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

using namespace braid;
using namespace braid::rt;
using namespace braid::cost;

namespace {

/// A position in a stream: item `index` of stream `stream`.
struct Pos {
  unsigned stream = 0;
  int64_t index = -1;
};

/// One thing a stream does: a kernel, or a collective (sync or start).
struct Item {
  bool comm = false;
  const Instr *instr = nullptr;
  double seconds = 0; // uncontended; for a collective, set per group color
  uint64_t commBytes = 0;
  /// The position among this stream's collectives of the same group.
  int64_t groupSeq = 0;
  /// Items (of this rank) that must have ended before this one starts.
  std::vector<Pos> deps;
};

} // namespace

struct SimBackend::State {
  const Plan *plan = nullptr;
  std::vector<std::vector<Item>> streams;
  /// Per stream, the dependencies the next item takes (set by waits).
  std::vector<std::vector<Pos>> pending;
  /// Where each event was recorded: the last item before it.
  std::vector<Pos> eventPos, futurePos;
  /// Per stream, the collectives issued so far on each group.
  std::vector<std::map<int, int64_t>> groupSeqs;

  void add(unsigned stream, Item item) {
    item.deps = std::move(pending[stream]);
    pending[stream].clear();
    streams[stream].push_back(std::move(item));
  }
};

SimBackend::SimBackend(Cluster cluster)
    : cluster(std::move(cluster)), state(std::make_unique<State>()) {}
SimBackend::~SimBackend() = default;

void SimBackend::prepare(const Plan &plan) {
  if (int64_t(plan.worldSize) > cluster.gpus())
    throw PlanError("the plan is for " + std::to_string(plan.worldSize) +
                    " ranks, but cluster '" + cluster.name + "' has " +
                    std::to_string(cluster.gpus()) + " GPUs");
  state->plan = &plan;
  state->eventPos.assign(plan.numEvents, Pos());
  state->futurePos.assign(plan.numFutures, Pos());
  state->streams.assign(plan.streams.size(), {});
  state->pending.assign(plan.streams.size(), {});
  state->groupSeqs.assign(plan.streams.size(), {});
}

void SimBackend::kernel(unsigned stream, const Instr &instr) {
  Item item;
  item.instr = &instr;
  item.seconds =
      kernelSeconds(cluster, instr.flops, instr.bytesRead + instr.bytesWritten,
                    computeTypeOf(*state->plan, instr));
  state->add(stream, std::move(item));
}

void SimBackend::collective(unsigned stream, const Instr &instr) {
  Item item;
  item.comm = true;
  item.instr = &instr;
  uint64_t inputs = 0, results = 0;
  for (uint32_t id : instr.operands)
    inputs += state->plan->buffers[id].bytes;
  for (uint32_t id : instr.results)
    results += state->plan->buffers[id].bytes;
  item.commBytes = getCommBytes(instr.collective(), inputs, results);
  item.groupSeq = state->groupSeqs[stream][instr.group]++;
  state->add(stream, std::move(item));
}

void SimBackend::startCollective(unsigned stream, const Instr &instr) {
  collective(stream, instr);
  state->futurePos[instr.future] = {stream,
                                    int64_t(state->streams[stream].size()) - 1};
}

void SimBackend::waitCollective(unsigned stream, const Instr &start) {
  state->pending[stream].push_back(state->futurePos[start.future]);
}

void SimBackend::recordEvent(unsigned stream, int event) {
  state->eventPos[event] = {stream, int64_t(state->streams[stream].size()) - 1};
}

void SimBackend::waitEvent(unsigned stream, int event) {
  if (state->eventPos[event].index >= 0)
    state->pending[stream].push_back(state->eventPos[event]);
}

void SimBackend::read(const Buffer &buffer, void *dst) {
  std::memset(dst, 0, buffer.bytes);
}

namespace {

struct TraceEvent {
  int64_t rank;
  unsigned stream;
  const Item *item;
  double start, end;
};

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
    if (zeroComm)
      return 0;
    int group = item.instr->group;
    std::vector<int64_t> full;
    // The shape on the whole cluster: the group's world ranks.
    const Group &g = plan.groups[size_t(group)];
    for (int64_t r = 0; r < int64_t(plan.worldSize); ++r) {
      int64_t c = 0, index = 0;
      g.locate(r, c, index);
      if (c == color)
        full.push_back(r);
    }
    return collectiveSeconds(cluster, item.instr->collective(), item.commBytes,
                             groupShapeOf(cluster, full));
  }

  void finish(int64_t r, unsigned s, double start, const Item &item) {
    StreamState &st = state[size_t(r)][s];
    if (r == 0)
      startOf0[offsets[s] + size_t(st.next)] = start;
    if (recordTrace && r < traceRanks)
      trace.push_back({r, s, &item, start, now});
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

void writeTrace(std::ostream &os, const Plan &plan,
                const std::vector<TraceEvent> &events, int64_t ranks) {
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first)
      os << ",\n";
    first = false;
  };
  auto quoted = [](const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        q += '\\';
      if (static_cast<unsigned char>(c) >= 0x20)
        q += c;
    }
    return q + "\"";
  };
  for (int64_t r = 0; r < ranks; ++r) {
    sep();
    os << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r
       << ",\"args\":{\"name\":\"rank " << r << "\"}}";
    for (size_t s = 0; s < plan.streams.size(); ++s) {
      sep();
      os << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r
         << ",\"tid\":" << s
         << ",\"args\":{\"name\":" << quoted(plan.streams[s].name()) << "}}";
    }
  }
  os << std::setprecision(12);
  for (const TraceEvent &e : events) {
    sep();
    const Instr &i = *e.item->instr;
    os << "{\"ph\":\"X\",\"pid\":" << e.rank << ",\"tid\":" << e.stream
       << ",\"name\":" << quoted(i.name()) << ",\"cat\":\""
       << (e.item->comm ? "comm" : "compute") << "\",\"ts\":" << e.start * 1e6
       << ",\"dur\":" << (e.end - e.start) * 1e6
       << ",\"args\":{\"location\":" << quoted(i.location);
    if (e.item->comm)
      os << ",\"bytes\":" << e.item->commBytes;
    else
      os << ",\"flops\":" << i.flops
         << ",\"bytes\":" << i.bytesRead + i.bytesWritten;
    os << "}}";
  }
  os << "\n]}\n";
}

} // namespace

SimReport SimBackend::simulate(std::ostream *trace, int64_t traceRanks) {
  const Plan &plan = *state->plan;
  const auto &items = state->streams;
  int64_t ranks = plan.worldSize;
  SimReport rep;
  rep.ranks = ranks;
  rep.peakMemoryBytes = plan.arenaBytes;

  Player play(plan, cluster, items, ranks, /*zeroComm=*/false,
              /*contention=*/true);
  play.recordTrace = trace != nullptr;
  play.traceRanks = traceRanks < 0 ? ranks : std::min(traceRanks, ranks);
  play.run();
  rep.stepTime = play.now;
  rep.exposedComm = play.exposed;
  rep.commWallTime = play.commWall;
  rep.overlapFraction =
      play.commWall > 0 ? (play.commWall - play.exposed) / play.commWall : 1;

  // Rank 0's work, uncontended.
  std::vector<std::vector<double>> seconds(items.size());
  for (size_t s = 0; s < items.size(); ++s)
    for (const Item &item : items[s]) {
      double t = item.seconds;
      if (item.comm) {
        int64_t color = play.colorOf[size_t(item.instr->group)][0];
        t = play.commSeconds(item, color);
        rep.commTime += t;
        ++rep.collectives;
      } else {
        rep.computeTime += t;
        ++rep.kernels;
      }
      seconds[s].push_back(t);
    }

  // The bounds. Compute must all run, and while it hides communication it
  // runs slower: the least time for compute C and communication M with
  // contention a and b (docs/CostModel.md).
  double c = rep.computeTime, m = rep.commTime;
  double a = cluster.computeSlowdownDuringComm,
         b = cluster.commSlowdownDuringCompute;
  double gain = std::max(0.0, 1 / (1 + a) + 1 / (1 + b) - 1);
  auto least = [&](double c, double m) {
    return c + m - std::min((1 + a) * c, (1 + b) * m) * gain;
  };
  rep.computeBound = least(c, m);
  // The earliest start of every item if collectives took no time: the
  // compute that must precede it.
  Player early(plan, cluster, items, 1, /*zeroComm=*/true,
               /*contention=*/false);
  early.run();
  double firstComm = INFINITY, lastComm = -1;
  Pos last;
  for (size_t s = 0; s < items.size(); ++s)
    for (size_t i = 0; i < items[s].size(); ++i)
      if (items[s][i].comm) {
        double t = early.startOf0[early.offsets[s] + i];
        firstComm = std::min(firstComm, t);
        if (t >= lastComm) {
          lastComm = t;
          last = {unsigned(s), int64_t(i)};
        }
      }
  if (last.index >= 0) {
    // No collective can start before the compute it waits for; then the
    // rest of the compute and all communication, with their contention.
    rep.commBound = firstComm + least(std::max(0.0, c - firstComm), m);
    // The last collective, and the kernels that wait for it up to the next
    // wait for a collective (its optimizer update).
    double update = 0;
    auto waitsOnComm = [&](const Item &item) {
      if (item.comm)
        return true;
      for (const Pos &d : item.deps)
        if (items[d.stream][size_t(d.index)].comm)
          return true;
      return false;
    };
    for (size_t s = 0; s < items.size(); ++s)
      for (size_t i = 0; i < items[s].size(); ++i) {
        bool after = false;
        if (s == last.stream && int64_t(i) == last.index + 1)
          after = true;
        for (const Pos &d : items[s][i].deps)
          if (d.stream == last.stream && d.index == last.index)
            after = true;
        if (!after)
          continue;
        for (size_t j = i; j < items[s].size(); ++j) {
          if (j > i && waitsOnComm(items[s][j]))
            break;
          if (!items[s][j].comm)
            update += seconds[s][j];
        }
      }
    // The last collective starts after the compute E before it; the other
    // communication either overlaps that compute (X of it, slowing it by
    // a / (1 + a) of X) or comes after it, where it can at best overlap the
    // update U. Least over X, at the breakpoints of this piecewise-linear
    // function.
    double lastSeconds = seconds[last.stream][size_t(last.index)];
    double others = std::max(0.0, m - lastSeconds);
    double k = a * (1 + b) / (1 + a);
    double most = std::min(others, (1 + a) * lastComm);
    double extra = INFINITY;
    for (double x : {0.0, std::clamp(others - update, 0.0, most), most})
      extra = std::min(extra, k * x + std::max(update, others - x));
    rep.tailBound = lastComm + lastSeconds + extra;
  }
  rep.bound = std::max({rep.computeBound, rep.commBound, rep.tailBound});
  // (At most 1: the bound can exceed the step by rounding.)
  rep.efficiency =
      rep.stepTime > 0 ? std::min(1.0, rep.bound / rep.stepTime) : 1;
  if (trace)
    writeTrace(*trace, plan, play.trace, play.traceRanks);
  return rep;
}

void braid::rt::printSimReport(std::ostream &os, const SimReport &r,
                               const Cluster &cluster) {
  auto ms = [](double s) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(6) << s * 1e3 << " ms";
    return o.str();
  };
  os << "simulated on " << cluster.name << " (" << cluster.gpus() << " x "
     << cluster.gpu << "), " << r.ranks << " ranks, " << r.kernels
     << " kernels and " << r.collectives << " collectives a rank\n";
  os << "  step time              " << ms(r.stepTime) << "\n";
  os << "  compute time           " << ms(r.computeTime) << "\n";
  os << "  communication time     " << ms(r.commTime) << "\n";
  os << "  exposed communication  " << ms(r.exposedComm) << "\n";
  os << "  overlap fraction       " << std::fixed << std::setprecision(4)
     << r.overlapFraction << "\n";
  os << "  peak memory            " << r.peakMemoryBytes << " bytes ("
     << std::setprecision(2) << double(r.peakMemoryBytes) / (1 << 30)
     << " GiB, the plan's arena)\n";
  os << "  lower bound            " << ms(r.bound) << " (compute "
     << ms(r.computeBound) << ", communication " << ms(r.commBound)
     << ", last bucket " << ms(r.tailBound) << ")\n";
  os << "  efficiency             " << std::setprecision(4) << r.efficiency
     << "\n";
}

void braid::rt::writeSimReportJson(std::ostream &os, const SimReport &r,
                                   const Cluster &cluster) {
  os << std::setprecision(17);
  os << "{\"cluster\": \"" << cluster.name << "\", \"ranks\": " << r.ranks
     << ", \"kernels\": " << r.kernels << ", \"collectives\": " << r.collectives
     << ", \"step_time\": " << r.stepTime
     << ", \"compute_time\": " << r.computeTime
     << ", \"comm_time\": " << r.commTime
     << ", \"exposed_comm\": " << r.exposedComm
     << ", \"comm_wall_time\": " << r.commWallTime
     << ", \"overlap_fraction\": " << r.overlapFraction
     << ", \"peak_memory_bytes\": " << r.peakMemoryBytes
     << ", \"bound\": " << r.bound << ", \"compute_bound\": " << r.computeBound
     << ", \"comm_bound\": " << r.commBound
     << ", \"tail_bound\": " << r.tailBound
     << ", \"efficiency\": " << r.efficiency << "}\n";
}
