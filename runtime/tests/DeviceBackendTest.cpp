//===- DeviceBackendTest.cpp - the GPU backend's logic on a fake device ---===//
//
// DeviceBackend (what the cuda backend does with CUDA and NCCL) over
// FakeDevice, on hand-written plans: every stream thread selects the rank's
// device; a failed launch is an error naming its instruction; host copies go
// through pinned memory and are waited for; a node with more ranks than
// devices is refused; every communicator is warmed up in connect, and a
// hung warm-up names its group; an error NCCL reports asynchronously, and a
// collective that never completes, abort every communicator and name the
// collective and its group. Given plan files, it also runs each on one fake
// device per rank, all ranks in this process, with delays that differ by
// rank, and checks that every rank makes the same communicator calls in
// the same order, the order collectiveOrder derives from the plan. An
// evaluation program runs over the prepared plan's arena (setProgram).
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/DeviceBackend.h"
#include "Expect.h"
#include "FakeDevice.h"
#include "TestBackend.h"

#include <cstdio>
#include <random>
#include <string>

using namespace braid;
using namespace braid::rt;

static bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A DeviceBackend over a FakeDevice the test keeps a pointer to.
struct Rig {
  FakeDevice *device;
  std::unique_ptr<DeviceBackend> backend;

  explicit Rig(DeviceBackend::Options options = {},
               const std::function<void(FakeDevice &)> &setup = {}) {
    auto fake = std::make_unique<FakeDevice>();
    fake->expected = options.localRank;
    if (setup)
      setup(*fake);
    device = fake.get();
    backend = std::make_unique<DeviceBackend>(std::move(fake), options);
  }
};

/// Two compute streams and a comm stream: kernels on each, a bucket's
/// all-reduce started on the comm stream and waited on compute stream 0.
static PlanBuilder threeStreams(uint32_t &x, uint32_t &y, uint32_t &z) {
  PlanBuilder b(2, 1);
  b.plan.worldSize = 1;
  b.plan.groups.push_back({"grid", {1}, {0}});
  x = b.buffer(16);
  y = b.buffer(16);
  z = b.buffer(16);
  b.kernel(0, Opcode::Scale, {x}, {y}).attrs = ops::ScaleAttrs{2.0};
  int e = b.record(0);
  b.waitEvent(1, e);
  b.kernel(1, Opcode::Scale, {y}, {z}).attrs = ops::ScaleAttrs{3.0};
  b.waitEvent(2, e);
  int f = b.start(2, {y}, {y});
  b.wait(0, f);
  uint32_t w = b.buffer(16);
  b.kernel(0, Opcode::Scale, {y}, {w}).attrs = ops::ScaleAttrs{1.0};
  return b;
}

/// Defect 1: a new host thread's current device is device 0.
static void testEveryThreadSelects() {
  uint32_t x, y, z;
  PlanBuilder b = threeStreams(x, y, z);
  DeviceBackend::Options options;
  options.localRank = 3;
  options.localRanks = 4;
  Rig rig(options);
  EXPECT(rig.backend->deviceIndex() == 3, "local rank 3 took device %d",
         rig.backend->deviceIndex());
  rig.backend->prepare(b.plan);
  rig.backend->connect();
  {
    Executor executor(b.plan, *rig.backend);
    for (int step = 0; step < 20; ++step)
      executor.runStep();
  }
  EXPECT(rig.device->launches == 20 * 3, "%d launches",
         rig.device->launches.load());
  EXPECT(rig.device->wrongThread == 0,
         "%d launches or NCCL calls came from a thread whose current device "
         "was not the rank's",
         rig.device->wrongThread.load());
  // The constructing thread and one per stream.
  EXPECT(rig.device->selectedThreads.size() == 1 + b.plan.streams.size(),
         "%zu threads selected a device", rig.device->selectedThreads.size());
  for (int d : rig.device->selected())
    EXPECT(d == 3, "a thread selected device %d, not 3", d);
}

/// Defect 2: launches are checked, and a failed one names its instruction.
static void testLaunchError() {
  uint32_t x, y, z;
  PlanBuilder b = threeStreams(x, y, z);
  b.plan.streams[1].instrs[1].location = "model.py:12";
  Rig rig({}, [](FakeDevice &d) { d.failLaunch = 3 * 2 + 1; });
  rig.backend->prepare(b.plan);
  rig.backend->connect();
  Executor executor(b.plan, *rig.backend);
  executor.runStep();
  executor.runStep();
  std::string message;
  try {
    executor.runStep();
  } catch (const KernelError &e) {
    message = e.what();
  }
  // The 7th launch is the first of step 3: stream 0's scale or stream 1's.
  EXPECT(contains(message, "fake: launching 'scale' at ") &&
             contains(message, "failed: too many resources requested"),
         "the launch failure read: '%s'", message.c_str());
}

/// Defect 3: host copies through pinned memory on a plan stream, complete
/// before they return; the arena is cleared the same way.
static void testHostCopies() {
  uint32_t x, y, z;
  PlanBuilder b = threeStreams(x, y, z);
  Rig rig;
  rig.backend->prepare(b.plan);
  std::vector<float> zeros(16, 1.0f);
  rig.backend->read(b.plan.buffers[z], zeros.data());
  EXPECT(zeros[5] == 0.0f,
         "the arena was not cleared before prepare "
         "returned: %g",
         zeros[5]);
  rig.backend->connect();
  std::vector<float> in(16);
  for (int i = 0; i < 16; ++i)
    in[i] = float(i);
  rig.backend->write(b.plan.buffers[x], in.data());
  Executor executor(b.plan, *rig.backend);
  executor.runStep();
  std::vector<float> out(16);
  rig.backend->read(b.plan.buffers[z], out.data());
  EXPECT(out[5] == 30.0f,
         "z[5] = %g after a step, not 30 (a host copy not "
         "complete when the step began?)",
         out[5]);
  EXPECT(rig.device->unpinnedCopies == 0,
         "%d copies had an end in neither device nor pinned memory",
         rig.device->unpinnedCopies.load());
  EXPECT(rig.device->hostCopies == 3, "%d host copies, not 3",
         rig.device->hostCopies.load());
}

/// Defect 5: more ranks than devices on a node.
static void testTooManyRanks() {
  DeviceBackend::Options options;
  options.localRank = 2;
  options.localRanks = 3;
  std::string message;
  try {
    Rig rig(options, [](FakeDevice &d) { d.devices = 2; });
  } catch (const std::exception &e) {
    message = e.what();
  }
  EXPECT(message == "fake: this node runs 3 ranks but has 2 GPUs; NCCL needs "
                    "a GPU of its own for each rank: start at most 2 ranks "
                    "per node",
         "more ranks than devices read: '%s'", message.c_str());
}

/// Defect 8: every communicator is connected by a warm-up all-reduce in
/// connect, under the deadline.
static void testWarmUp() {
  uint32_t x, y, z;
  PlanBuilder b = threeStreams(x, y, z);
  {
    Rig rig;
    rig.backend->prepare(b.plan);
    rig.backend->connect();
    EXPECT(rig.device->calls.size() == 1 &&
               rig.device->calls[0] == (CommCall{0, 2, "allReduce 1 x f32"}),
           "connect made %zu calls", rig.device->calls.size());
  }
  DeviceBackend::Options options;
  options.timeoutSeconds = 0.2;
  Rig rig(options, [](FakeDevice &d) { d.hangAtCall = 1; });
  rig.backend->prepare(b.plan);
  std::string message;
  try {
    rig.backend->connect();
  } catch (const CommError &e) {
    message = e.what();
  }
  EXPECT(contains(message, "fake: connecting the communicator of axes 0 of "
                           "grid 'grid' 1, stream comm 0 (1 ranks, this rank "
                           "0 is number 0): its first all-reduce") &&
             contains(message, "within 0.2 s; aborted this rank's "
                               "communicators"),
         "a hung warm-up read: '%s'", message.c_str());
  EXPECT(rig.device->aborted() == std::make_pair(1, 1),
         "%d of %d communicators aborted", rig.device->aborted().second,
         rig.device->aborted().first);
}

/// Defect 4: an asynchronous NCCL error, and a collective that never
/// completes, each abort every communicator and name the collective.
static void testWatchdog() {
  uint32_t x, y, z;
  for (bool hang : {false, true}) {
    PlanBuilder b = threeStreams(x, y, z);
    b.plan.streams[2].instrs[1].location = "bucket 0";
    DeviceBackend::Options options;
    options.timeoutSeconds = 0.2;
    // Call 1 is the warm-up; a step's all-reduce is three calls (a group).
    Rig rig(options, [&](FakeDevice &d) {
      (hang ? d.hangAtCall : d.errorAtCall) = 1 + 3 + 2;
    });
    rig.backend->prepare(b.plan);
    rig.backend->connect();
    Executor executor(b.plan, *rig.backend);
    executor.runStep();
    std::string message;
    try {
      executor.runStep();
    } catch (const CommError &e) {
      message = e.what();
    }
    if (hang)
      EXPECT(contains(message, "fake: collective 'all_reduce_start' at bucket "
                               "0 on device group #0 (axes 0 of grid 'grid' "
                               "1; 1 ranks, this rank 0 is number 0) did not "
                               "complete, and NCCL reported no error") &&
                 contains(message, "within 0.2 s; aborted this rank's "
                                   "communicators"),
             "a hung collective read: '%s'", message.c_str());
    else
      EXPECT(message == "fake: NCCL reported an error on the communicator "
                        "of axes 0 of grid 'grid' 1, stream comm 0 (1 ranks, "
                        "this rank 0 is number 0) while 'all_reduce_start' "
                        "at bucket 0 was "
                        "in flight: unhandled system error (injected: a NIC "
                        "went down); aborted this rank's communicators",
             "an asynchronous error read: '%s'", message.c_str());
    EXPECT(rig.device->aborted() == std::make_pair(1, 1),
           "%d of %d communicators aborted", rig.device->aborted().second,
           rig.device->aborted().first);
  }
}

/// --profile: each kernel's device time, by op.
static void testProfile() {
  uint32_t x, y, z;
  PlanBuilder b = threeStreams(x, y, z);
  DeviceBackend::Options options;
  options.profile = true;
  Rig rig(options, [](FakeDevice &d) { d.launchMicros = 300; });
  rig.backend->prepare(b.plan);
  rig.backend->connect();
  Executor executor(b.plan, *rig.backend);
  for (int step = 0; step < 5; ++step)
    executor.runStep();
  KernelProfile *profile = rig.backend->kernelProfile();
  std::vector<KernelProfile::Entry> totals =
      profile ? profile->totals() : std::vector<KernelProfile::Entry>{};
  EXPECT(totals.size() == 1 && totals[0].opcode == Opcode::Scale &&
             totals[0].calls == 15 && totals[0].seconds >= 15 * 300e-6 &&
             totals[0].seconds < 1.0,
         "the profile holds %zu ops (%llu calls, %.6f s)", totals.size(),
         totals.empty() ? 0ull : (unsigned long long)totals[0].calls,
         totals.empty() ? 0.0 : totals[0].seconds);
  std::string report = profile ? profile->report(5, 0.01) : "";
  EXPECT(contains(report, "profile: fake backend, each kernel's device time"),
         "the report reads: %s", report.c_str());
}

/// collectiveOrder by hand: round-robin over the streams, a stream that
/// waits skipped until what it waits for has been issued; a cycle refused.
static void testCollectiveOrder() {
  PlanBuilder b(1, 2);
  uint32_t x = b.buffer(4);
  int f0 = b.start(1, {x}, {x}), f1 = b.start(1, {x}, {x});
  int e = b.record(0);
  b.waitEvent(2, e);
  int f2 = b.start(2, {x}, {x}), f3 = b.start(2, {x}, {x});
  for (int f : {f0, f1, f2, f3})
    b.wait(0, f);
  std::vector<const Instr *> order = collectiveOrder(b.plan);
  std::vector<int> futures;
  for (const Instr *i : order)
    futures.push_back(i->future);
  // Round 1: the event, f0, comm 1's wait for the event; round 2: f1
  // and f2; round 3: f3.
  EXPECT((futures == std::vector<int>{f0, f1, f2, f3}),
         "with a wait: %zu collectives, order %d %d %d %d", futures.size(),
         futures.size() > 0 ? futures[0] : -1,
         futures.size() > 1 ? futures[1] : -1,
         futures.size() > 2 ? futures[2] : -1,
         futures.size() > 3 ? futures[3] : -1);
  b.plan.streams[2].instrs.erase(b.plan.streams[2].instrs.begin());
  futures.clear();
  for (const Instr *i : collectiveOrder(b.plan))
    futures.push_back(i->future);
  EXPECT((futures == std::vector<int>{f0, f2, f1, f3}),
         "round-robin: order %d %d %d %d", futures.size() > 0 ? futures[0] : -1,
         futures.size() > 1 ? futures[1] : -1,
         futures.size() > 2 ? futures[2] : -1,
         futures.size() > 3 ? futures[3] : -1);

  PlanBuilder c(2, 0);
  int e0 = c.plan.numEvents++, e1 = c.plan.numEvents++;
  c.waitEvent(0, e1);
  c.add(0, Opcode::RecordEvent, {}, {}).event = e0;
  c.waitEvent(1, e0);
  c.add(1, Opcode::RecordEvent, {}, {}).event = e1;
  std::string message;
  try {
    collectiveOrder(c.plan);
  } catch (const PlanError &err) {
    message = err.what();
  }
  EXPECT(message == "the plan's streams wait on each other in a cycle: "
                    "compute 0 at 'wait_event' at test, compute 1 at "
                    "'wait_event' at test",
         "a cycle read: '%s'", message.c_str());
}

/// Where each instruction of `plan` is: its stream.
static unsigned streamOf(const Plan &plan, const Instr *instr) {
  for (unsigned s = 0; s < plan.streams.size(); ++s)
    for (const Instr &i : plan.streams[s].instrs)
      if (&i == instr)
        return s;
  return ~0u;
}

/// A backend that issues collectives as each stream reaches them: what the
/// cuda backend did before, for the test to show that it can tell.
struct UnorderedBackend : DeviceBackend {
  using DeviceBackend::DeviceBackend;
  bool ordersCollectives() const override { return false; }
};

/// Runs `plan` on one fake device per rank, each rank on threads of its
/// own; returns each rank's communicator calls after connect.
static std::vector<std::vector<CommCall>>
runRanks(const Plan &plan, int steps, bool ordered, unsigned seed) {
  int ranks = int(plan.worldSize);
  std::vector<std::vector<CommCall>> logs(ranks);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(ranks);
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto fake = std::make_unique<FakeDevice>();
        FakeDevice *device = fake.get();
        fake->expected = r;
        fake->runKernels = false;
        // Delays that differ by rank and stream, so that the streams of
        // different ranks reach their collectives in different orders.
        std::mt19937 rng(seed + r);
        for (unsigned s = 0; s < plan.streams.size(); ++s)
          fake->commDelayMicros[s] = int(rng() % 3) * 300;
        DeviceBackend::Options options;
        options.worldRank = options.localRank = r;
        options.localRanks = ranks;
        std::unique_ptr<DeviceBackend> backend =
            ordered
                ? std::make_unique<DeviceBackend>(std::move(fake), options)
                : std::make_unique<UnorderedBackend>(std::move(fake), options);
        backend->prepare(plan);
        backend->connect();
        {
          std::lock_guard<std::mutex> lock(device->mutex);
          device->calls.clear();
        }
        Executor executor(plan, *backend);
        for (int s = 0; s < steps; ++s)
          executor.runStep();
        std::lock_guard<std::mutex> lock(device->mutex);
        logs[r] = device->calls;
        EXPECT(device->wrongThread == 0, "rank %d: %d calls off its device", r,
               device->wrongThread.load());
      } catch (const std::exception &e) {
        errors[r] = e.what();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int r = 0; r < ranks; ++r)
    EXPECT(errors[r].empty(), "rank %d failed: %s", r, errors[r].c_str());
  return logs;
}

/// Defect 7: the NCCL calls of every rank in one order, the plan's.
static void testOrder(const std::string &path) {
  Plan plan = loadPlanFile(path);
  std::vector<const Instr *> order = collectiveOrder(plan);
  // The calls the order makes, issued one by one on recording
  // communicators over a host arena.
  std::vector<CommCall> expected;
  std::mutex mutex;
  std::vector<uint8_t> arena(plan.arenaBytes + 64);
  std::set<int> groups;
  std::set<unsigned> streams;
  const int steps = 3;
  std::vector<CommunicatorSpec> specs = communicatorsOf(plan);
  for (int step = 0; step < steps; ++step)
    for (const Instr *instr : order) {
      unsigned stream = streamOf(plan, instr);
      // The communicator's number is its place in the plan's canonical
      // list (what connect names it by), not the program's group number.
      int id = -1;
      for (size_t c = 0; c < specs.size(); ++c)
        if (specs[c].matches(plan.groups[instr->group], plan.streams[stream]))
          id = int(c);
      RecordingComm comm(expected, mutex, id, stream, 0,
                         int(plan.groups[instr->group].size()));
      HostMemory memory;
      issueCollective(plan, *instr, arena.data(), comm, memory);
      groups.insert(instr->group);
      streams.insert(stream);
    }
  std::string names;
  for (unsigned s : streams)
    names += (names.empty() ? "" : ", ") + plan.streams[s].name();
  std::printf("order: %zu collectives, %zu device groups, %zu streams that "
              "issue them (%s), %u ranks\n",
              order.size(), groups.size(), streams.size(), names.c_str(),
              plan.worldSize);
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<std::vector<CommCall>> logs = runRanks(plan, steps, true, seed);
    for (size_t r = 0; r < logs.size(); ++r) {
      size_t first = 0;
      while (first < logs[r].size() && first < expected.size() &&
             logs[r][first] == expected[first])
        ++first;
      EXPECT(logs[r] == expected,
             "seed %u, rank %zu: %zu calls, %zu expected, first difference "
             "at call %zu",
             seed, r, logs[r].size(), expected.size(), first);
    }
  }
  // Without the order the ranks' calls differ (the delays see to it), so
  // the comparison above can fail.
  if (groups.size() > 1 || streams.size() > 1) {
    bool differs = false;
    for (unsigned seed = 1; seed <= 5 && !differs; ++seed) {
      std::vector<std::vector<CommCall>> logs =
          runRanks(plan, steps, false, seed);
      for (const auto &log : logs)
        differs |= log != expected;
    }
    EXPECT(differs, "issued as each stream reaches them, the calls still "
                    "matched the plan's order on every rank in 5 runs");
  }
}

/// An evaluation program (Plan::evaluation) runs between steps over the
/// prepared plan's arena: setProgram makes its buffers the ones the kernels
/// and host copies name, and the prepared plan's again after; a program
/// needing more streams or events than were made for the plan is refused.
static void testEvaluationProgram() {
  // The step: y = 2 x at bytes 64..128 from x at 0..64.
  PlanBuilder b(1, 0);
  b.plan.worldSize = 1;
  uint32_t x = b.buffer(16), y = b.buffer(16);
  b.kernel(0, Opcode::Scale, {x}, {y}).attrs = ops::ScaleAttrs{2.0};
  b.buffer(16); // room for the evaluation's result
  // The evaluation: z = 3 x, its x at the step's bytes, z past the step's,
  // numbered otherwise than the step's buffers (so that the step's plan
  // would name other bytes).
  PlanBuilder e(1, 0);
  e.plan.worldSize = 1;
  uint32_t ez = e.buffer(16), ex = e.buffer(16);
  e.plan.buffers[ez].offset = b.plan.buffers[2].offset;
  e.plan.buffers[ex].offset = b.plan.buffers[x].offset;
  e.plan.arenaBytes = b.plan.arenaBytes;
  e.kernel(0, Opcode::Scale, {ex}, {ez}).attrs = ops::ScaleAttrs{3.0};
  Rig rig;
  rig.backend->prepare(b.plan);
  rig.backend->connect();
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i)
    in[i] = float(i);
  rig.backend->write(b.plan.buffers[x], in.data());
  Executor step(b.plan, *rig.backend);
  Executor eval(e.plan, *rig.backend);
  step.runStep();
  rig.backend->setProgram(e.plan);
  eval.runStep();
  rig.backend->read(e.plan.buffers[ez], out.data());
  EXPECT(out[5] == 15.0f, "the evaluation's z[5] = %g, not 15", out[5]);
  rig.backend->setProgram(b.plan);
  step.runStep();
  rig.backend->read(b.plan.buffers[y], out.data());
  EXPECT(out[5] == 10.0f, "the step's y[5] = %g after the evaluation, not 10",
         out[5]);
  // Two streams where the plan was prepared with one.
  PlanBuilder wide(2, 0);
  wide.plan.worldSize = 1;
  wide.buffer(16);
  std::string message;
  try {
    rig.backend->setProgram(wide.plan);
  } catch (const std::exception &err) {
    message = err.what();
  }
  EXPECT(contains(message, "needs more arena, streams or events than the "
                           "prepared plan"),
         "a program with more streams read: '%s'", message.c_str());
}

int main(int argc, char **argv) {
  testEveryThreadSelects();
  testLaunchError();
  testHostCopies();
  testTooManyRanks();
  testWarmUp();
  testWatchdog();
  testProfile();
  testCollectiveOrder();
  testEvaluationProgram();
  for (int i = 1; i < argc; ++i)
    testOrder(argv[i]);
  int failures = expectFailures().load();
  std::printf("device backend tests: %d failed\n", failures);
  return failures ? 1 : 0;
}
