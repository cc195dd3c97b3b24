//===- SimBackend.cpp - the simulated cluster -----------------------------===//
//
// The executor drives the sim backend like the others; the backend records
// what each stream issues (SimItems.h), then simulate() plays the recording
// on every rank (SimPlayer.h) and computes the lower bound of
// docs/CostModel.md. The report's output is SimReport.cpp.
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/SimBackend.h"
#include "SimPlayer.h"

#include "braid-common/DeviceGroup.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace braid;
using namespace braid::rt;
using namespace braid::rt::sim;
using namespace braid::cost;

struct SimBackend::State {
  /// One recording per program: the plan's, or each stage program's of a
  /// pipeline (prepared one after the other).
  std::vector<Program> programs;
  /// Of the program being recorded: per stream, the dependencies the next
  /// item takes (set by waits); where each event was recorded and each
  /// future started (the last item before it); the collectives issued so
  /// far on each group, and the transfers to or from each peer of it.
  std::vector<std::vector<Pos>> pending;
  std::vector<Pos> eventPos, futurePos;
  std::map<std::tuple<int, int, int64_t>, int64_t> seqs;

  const Plan &plan() const { return *programs.back().plan; }
  std::vector<std::vector<Item>> &streams() { return programs.back().streams; }
  void add(unsigned stream, Item item) {
    item.deps = std::move(pending[stream]);
    pending[stream].clear();
    streams()[stream].push_back(std::move(item));
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
  if (plan.isPipelined())
    throw PlanError("the sim backend records a program: prepare each stage "
                    "program of a pipelined plan");
  // A stage program adds to the stages recorded before it; any other plan
  // starts afresh.
  if (plan.stage < 0 ||
      (!state->programs.empty() && state->programs.back().plan->stage < 0))
    state->programs.clear();
  state->programs.push_back({&plan, {}});
  state->streams().assign(plan.streams.size(), {});
  state->eventPos.assign(plan.numEvents, Pos());
  state->futurePos.assign(plan.numFutures, Pos());
  state->pending.assign(plan.streams.size(), {});
  state->seqs.clear();
}

void SimBackend::kernel(unsigned stream, const Instr &instr) {
  Item item;
  item.instr = &instr;
  item.seconds =
      kernelSeconds(cluster, instr.flops, instr.bytesRead + instr.bytesWritten,
                    computeTypeOf(state->plan(), instr), instr.product);
  state->add(stream, std::move(item));
}

void SimBackend::collective(unsigned stream, const Instr &instr) {
  Item item;
  item.comm = true;
  item.instr = &instr;
  uint64_t inputs = 0, results = 0;
  for (uint32_t id : instr.operands)
    inputs += state->plan().buffers[id].bytes;
  for (uint32_t id : instr.results)
    results += state->plan().buffers[id].bytes;
  item.commBytes = getCommBytes(instr.collective(), inputs, results);
  // The k-th collective of a group meets every member's k-th; the k-th
  // send to a peer meets that peer's k-th receive from this rank (a
  // send-receive's halves count among the sends and the receives).
  auto seq = [&](int direction, int64_t peer) {
    return state->seqs[{instr.group, direction, peer}]++;
  };
  switch (instr.collective()) {
  case CollectiveKind::Send:
    item.groupSeq = seq(1, instr.as<ops::SendAttrs>().peer);
    break;
  case CollectiveKind::Recv:
    item.groupSeq = seq(2, instr.as<ops::RecvAttrs>().peer);
    break;
  case CollectiveKind::SendRecv:
    // Its sends take the next positions of the sends to its peer, its
    // receives those of the receives from its peer.
    item.groupSeq = seq(1, instr.as<ops::SendRecvAttrs>().send_peer);
    item.recvSeq = seq(2, instr.as<ops::SendRecvAttrs>().recv_peer);
    state->seqs[{instr.group, 1, instr.as<ops::SendRecvAttrs>().send_peer}] +=
        int64_t(instr.operands.size()) - 1;
    state->seqs[{instr.group, 2, instr.as<ops::SendRecvAttrs>().recv_peer}] +=
        int64_t(instr.results.size()) - 1;
    break;
    // Every kind a case (no default): a new point-to-point kind must not be
    // counted as a group collective unseen.
    BRAID_CASE_NOT_POINT_TO_POINT_KINDS
    item.groupSeq = seq(0, 0);
    break;
  }
  state->add(stream, std::move(item));
}

void SimBackend::startCollective(unsigned stream, const Instr &instr) {
  collective(stream, instr);
  state->futurePos[instr.future] = {
      stream, int64_t(state->streams()[stream].size()) - 1};
}

void SimBackend::waitCollective(unsigned stream, const Instr &start) {
  state->pending[stream].push_back(state->futurePos[start.future]);
}

void SimBackend::recordEvent(unsigned stream, int event) {
  state->eventPos[event] = {stream,
                            int64_t(state->streams()[stream].size()) - 1};
}

void SimBackend::waitEvent(unsigned stream, int event) {
  if (state->eventPos[event].index >= 0)
    state->pending[stream].push_back(state->eventPos[event]);
}

void SimBackend::read(const Buffer &buffer, void *dst) {
  std::memset(dst, 0, buffer.bytes);
}

SimReport SimBackend::simulate(std::ostream *trace, int64_t traceRanks) {
  const std::vector<Program> &programs = state->programs;
  if (programs.empty())
    throw PlanError("the sim backend recorded no program");
  const Plan &head = *programs.front().plan;
  int64_t ranks = head.worldSize;
  bool pipelined = head.stage >= 0;
  // The program of each rank, and each stage's first rank (its figures).
  std::vector<uint32_t> programOf(size_t(ranks), 0);
  std::vector<int64_t> firstRank(programs.size(), -1);
  if (pipelined) {
    if (int64_t(programs.size()) != head.ppSize())
      throw PlanError("the pipeline has " + std::to_string(head.ppSize()) +
                      " stages, but " + std::to_string(programs.size()) +
                      " stage programs were recorded");
    for (size_t i = 0; i < programs.size(); ++i)
      if (programs[i].plan->stage != int32_t(i))
        throw PlanError("stage program " +
                        std::to_string(programs[i].plan->stage) +
                        " was recorded as stage " + std::to_string(i));
    for (int64_t r = 0; r < ranks; ++r) {
      int64_t color = 0, index = 0;
      locateInGroup(head.ppGrid, {head.ppAxis}, r, color, index);
      programOf[size_t(r)] = uint32_t(index);
    }
  }
  for (int64_t r = ranks; r-- > 0;)
    firstRank[programOf[size_t(r)]] = r;
  const Plan &plan = *programs[programOf[0]].plan;
  const auto &items = programs[programOf[0]].streams;
  SimReport rep;
  rep.ranks = ranks;
  for (const Program &p : programs)
    rep.peakMemoryBytes = std::max(rep.peakMemoryBytes, p.plan->arenaBytes);
  rep.gpuMemoryBytes = cluster.gpuMemoryBytes;

  int64_t shown = !trace           ? 0
                  : traceRanks < 0 ? ranks
                                   : std::min(traceRanks, ranks);
  PlayResult play = sim::play(programs, programOf, cluster, ranks,
                              /*zeroComm=*/false, /*contention=*/true, shown);
  rep.stepTime = play.now;
  rep.exposedComm = play.exposed;
  rep.commWallTime = play.commWall;
  rep.overlapFraction =
      play.commWall > 0 ? (play.commWall - play.exposed) / play.commWall : 1;

  // A program's work on rank `r`, uncontended: compute and communication.
  auto workOf = [&](const Program &p, int64_t r, double &compute,
                    double &comm) {
    compute = comm = 0;
    for (const auto &stream : p.streams)
      for (const Item &item : stream)
        (item.comm ? comm : compute) +=
            item.comm ? sim::commSeconds(*p.plan, cluster, item, r)
                      : item.seconds;
  };
  // Rank 0's work, uncontended.
  std::vector<std::vector<double>> seconds(items.size());
  for (size_t s = 0; s < items.size(); ++s)
    for (const Item &item : items[s]) {
      double t = item.seconds;
      if (item.comm) {
        t = sim::commSeconds(plan, cluster, item, 0);
        rep.commTime += t;
        rep.commBytes += item.commBytes;
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
  if (pipelined) {
    // Each stage's work must run on its ranks: the busiest stage bounds
    // the step; what the schedule leaves idle on each stage is its bubble.
    rep.computeBound = 0;
    double idle = 0;
    for (size_t i = 0; i < programs.size(); ++i) {
      double stageCompute = 0, stageComm = 0;
      workOf(programs[i], firstRank[i], stageCompute, stageComm);
      rep.computeBound =
          std::max(rep.computeBound, least(stageCompute, stageComm));
      double busy = play.busy[size_t(firstRank[i])];
      rep.stageBusy.push_back(busy);
      rep.stageCompute.push_back(stageCompute);
      std::array<double, 4> byAction{};
      for (const auto &stream : programs[i].streams)
        for (const Item &item : stream)
          if (!item.comm)
            byAction[std::min<size_t>(item.instr->action, 3)] += item.seconds;
      rep.stageActionCompute.push_back(byAction);
      rep.stageMemory.push_back(programs[i].plan->arenaBytes);
      rep.stageActivations.push_back(
          sim::activationPeakBytes(*programs[i].plan));
      idle += rep.stepTime > 0 ? 1 - busy / rep.stepTime : 0;
    }
    rep.bubbleFraction = idle / double(programs.size());
    rep.bound = rep.computeBound;
    rep.efficiency =
        rep.stepTime > 0 ? std::min(1.0, rep.bound / rep.stepTime) : 1;
    if (trace)
      writeTrace(*trace, programs, programOf, play.trace, shown);
    return rep;
  }
  // The earliest start of every item if collectives took no time: the
  // compute that must precede it.
  PlayResult early = sim::play(programs, programOf, cluster, 1,
                               /*zeroComm=*/true, /*contention=*/false, 0);
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
    writeTrace(*trace, programs, programOf, play.trace, shown);
  return rep;
}
