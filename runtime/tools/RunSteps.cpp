//===- RunSteps.cpp - braid-run's steps -----------------------------------===//
//
// RunSteps.h.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include "RunData.h"
#include "RunDeadline.h"
#include "RunProgress.h"
#include "RunSave.h"
#include "RunStartup.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/HalfFloat.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

using namespace braid;
using namespace braid::rt;

namespace {

/// One step of copying the carried state back: a copy from a result to its
/// argument, or a result set aside in host memory first (`stage`) and
/// written from there (`fromHost`).
struct CarryAction {
  uint32_t arg = 0, res = 0;
  bool stage = false, fromHost = false;
  size_t slot = 0;
};

/// The carried results are copied to their arguments as one parallel
/// assignment: a step may return its state in another order than it takes
/// it, and an update made in place shares its result's bytes with an
/// argument another copy writes. Each copy runs once no copy still to come
/// reads the bytes it writes; a cycle of such copies goes through host
/// memory. Computed once: the plan does not change between steps.
std::vector<CarryAction>
orderCarry(const Plan &plan,
           const std::vector<std::pair<uint32_t, uint32_t>> &carry) {
  auto overlap = [&](uint32_t a, uint32_t b) {
    const Buffer &x = plan.buffers[a], &y = plan.buffers[b];
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  };
  std::vector<CarryAction> out;
  std::vector<std::pair<uint32_t, uint32_t>> pending;
  // A copy in place (the update wrote its argument's bytes) is a no-op
  // that still orders: nothing may write those bytes before it.
  for (auto [arg, res] : carry)
    pending.push_back({arg, res});
  std::vector<bool> staged(pending.size(), false);
  std::vector<size_t> slotOf(pending.size(), 0);
  size_t slots = 0;
  std::vector<bool> done(pending.size(), false);
  for (size_t left = pending.size(); left > 0;) {
    bool progressed = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (done[i])
        continue;
      bool blocked = false;
      for (size_t j = 0; j < pending.size() && !blocked; ++j)
        blocked = j != i && !done[j] && !staged[j] &&
                  overlap(pending[i].first, pending[j].second);
      if (blocked)
        continue;
      CarryAction a{pending[i].first, pending[i].second};
      a.fromHost = staged[i];
      a.slot = slotOf[i];
      out.push_back(a);
      done[i] = true;
      --left;
      progressed = true;
    }
    if (progressed)
      continue;
    // A cycle: set one source aside.
    for (size_t i = 0; i < pending.size(); ++i)
      if (!done[i] && !staged[i]) {
        staged[i] = true;
        slotOf[i] = slots++;
        CarryAction a{pending[i].first, pending[i].second};
        a.stage = true;
        a.slot = slotOf[i];
        out.push_back(a);
        break;
      }
  }
  return out;
}

void runCarry(Backend &backend, const Plan &plan,
              const std::vector<CarryAction> &steps) {
  std::vector<std::vector<uint8_t>> host;
  for (const CarryAction &a : steps) {
    const Buffer &arg = plan.buffers[a.arg], &res = plan.buffers[a.res];
    if (a.stage) {
      if (host.size() <= a.slot)
        host.resize(a.slot + 1);
      host[a.slot].resize(res.bytes);
      backend.read(res, host[a.slot].data());
    } else if (a.fromHost) {
      backend.write(arg, host[a.slot].data());
    } else {
      backend.copy(arg, res);
    }
  }
}

/// A loss buffer's value, widened from bf16 or f16.
float readLoss(Backend &backend, const Buffer &buffer) {
  float loss = 0;
  if (isHalf(buffer.dtype)) {
    uint16_t half = 0;
    backend.read(buffer, &half);
    widenHalf(buffer.dtype, &half, &loss, 1);
  } else {
    backend.read(buffer, &loss);
  }
  return loss;
}

/// The evaluation program on --eval-batches batches of --eval-data: the
/// mean of their losses over the batches and the ranks, on every rank.
double evaluate(const Options &o, const Plan &plan, Backend &backend,
                Executor &executor, const Inputs &inputs, MPI_Comm lossComm) {
  const Plan &eval = plan.evaluation.front();
  const Buffer &lossBuffer = eval.buffers[eval.results.front().buffer];
  double local = 0;
  backend.setProgram(eval);
  for (int64_t batch = 1; batch <= o.evalBatches; ++batch) {
    inputs.evalTokens->write(backend, batch);
    executor.runStep();
    local += double(readLoss(backend, lossBuffer));
  }
  backend.setProgram(plan);
  double sum = 0;
  int ranks = 0;
  MPI_Comm_size(lossComm, &ranks);
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, lossComm);
  return sum / double(o.evalBatches) / double(ranks);
}

} // namespace

void braid::rt::runSteps(const Options &o, const Plan &plan, Backend &backend,
                         const Inputs &inputs, int rank, int world) {
  // With --resume, steps are numbered from the start of the training.
  int64_t first = o.resume.empty() ? 0 : inputs.stepsDone;
  // Results that carry state to the next step, by role and name.
  std::vector<std::pair<uint32_t, uint32_t>> carry; // (argument, result)
  int loss = -1;
  for (const Binding &r : plan.results) {
    if (r.role == Role::Loss && loss < 0)
      loss = int(r.buffer);
    if (r.role != Role::Parameter && r.role != Role::OptimizerState)
      continue;
    for (const Binding &a : plan.arguments)
      if (a.role == r.role && a.name == r.name)
        carry.push_back({a.buffer, r.buffer});
  }

  std::vector<CarryAction> carrySteps = orderCarry(plan, carry);
  // The ranks that compute a loss: all of them, or a pipeline's last
  // stage; the printed loss is their mean.
  int hasLoss = loss >= 0 ? 1 : 0, lossRanks = 0;
  MPI_Allreduce(&hasLoss, &lossRanks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  MPI_Comm lossComm;
  MPI_Comm_dup(MPI_COMM_WORLD, &lossComm);
  {
    Executor executor(plan, backend);
    // The evaluation program's own streams over the same backend and arena.
    std::unique_ptr<Executor> evalExecutor;
    if (inputs.evalTokens)
      evalExecutor =
          std::make_unique<Executor>(plan.evaluation.front(), backend);
    using Clock = std::chrono::steady_clock;
    double firstMs = 0;
    std::vector<double> restMs; // steps 2..N
    std::unique_ptr<Progress> progress;
    try {
      progress = std::make_unique<Progress>(o, plan, inputs, rank);
    } catch (const std::exception &e) {
      rankError(rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
      std::exit(1);
    }
    // An evaluation, printed and logged as after step `taken`.
    auto evaluateAfter = [&](int64_t taken) {
      double evalLoss = NAN;
      try {
        evalLoss = evaluate(o, plan, backend, *evalExecutor, inputs, lossComm);
      } catch (const std::exception &e) {
        rankError(rank, "evaluation after step " + std::to_string(taken) +
                            ": " + e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::exit(1);
      }
      progress->evaluation(taken, evalLoss);
      if (rank == 0) {
        std::printf("eval step %lld loss %.9g\n", (long long)taken, evalLoss);
        std::fflush(stdout);
      }
    };
    // With --eval-every, a training's start is evaluated too (step 0).
    if (evalExecutor && o.evalEvery && inputs.stepsDone == 0 &&
        inputs.steps > 0)
      evaluateAfter(0);
    for (int64_t step = 1; step <= inputs.steps; ++step) {
      Clock::time_point start = Clock::now();
      setCurrentStep(step);
      if (step == o.faultStep && rank == o.faultRank) {
        if (o.fault == "hang")
          for (;;)
            std::this_thread::sleep_for(std::chrono::seconds(1));
        // Killed as the step begins, before its first collective: the other
        // ranks block in this step's collectives until mpirun ends them. (A
        // kill some time into the step raced with steps that finish sooner,
        // such as fused attention's.)
        std::raise(SIGKILL);
      }
      try {
        for (auto &[id, bytes] : inputs.batch)
          backend.write(plan.buffers[id], bytes.data());
        // A token file's windows: step stepsDone + step of its stream.
        if (inputs.tokens)
          inputs.tokens->write(backend, inputs.stepsDone + step);
        if (inputs.samples)
          inputs.samples->write(backend, inputs.stepsDone + step);
        // Scheduled hyperparameters: this step's value (checked in range
        // before the first step).
        for (auto &[id, schedule] : inputs.schedules)
          backend.write(plan.buffers[id],
                        &schedule[size_t(inputs.stepsDone + step - 1)]);
        executor.runStep();
        // A no-op where the update was made in place.
        runCarry(backend, plan, carrySteps);
      } catch (const std::exception &e) {
        rankError(rank, "step " + std::to_string(step) + ": " + e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::exit(1);
      }
      double stepLoss = NAN;
      if (lossRanks > 0) {
        float local = 0, sum = 0;
        if (loss >= 0)
          local = readLoss(backend, plan.buffers[loss]);
        MPI_Allreduce(&local, &sum, 1, MPI_FLOAT, MPI_SUM, lossComm);
        stepLoss = double(sum / lossRanks);
        if (rank == 0) {
          // %.9g: every float32 loss round-trips, so two runs can be
          // compared to 1e-7 relative from the printed numbers alone.
          std::printf("step %lld/%lld loss %.9g\n", (long long)(first + step),
                      (long long)(first + inputs.steps),
                      double(sum / lossRanks));
          std::fflush(stdout);
        }
      }
      // The step's time: the batch, the step, the loss; not the checkpoint
      // or the evaluation after it.
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      // A checkpoint every --save-every steps of the training, and after
      // the last step of the run.
      int64_t taken = inputs.stepsDone + step;
      if (!o.checkpointDir.empty() &&
          (step == inputs.steps || (o.saveEvery && taken % o.saveEvery == 0))) {
        setEndTimeout(o.timeout);
        saveCheckpoint(o, plan, backend, inputs, rank, world, taken);
        setEndTimeout(0);
        armDeadline("the steps", 0);
        if (rank == 0) {
          std::printf("checkpoint %s\n",
                      checkpointPath(o.checkpointDir, taken).c_str());
          std::fflush(stdout);
        }
      }
      progress->step(step, stepLoss, ms);
      // An evaluation every --eval-every steps of the training, and after
      // the last step of the run (not timed as the step's).
      if (evalExecutor &&
          (step == inputs.steps || (o.evalEvery && taken % o.evalEvery == 0)))
        evaluateAfter(taken);
      if (step == 1) {
        firstMs = ms;
        // The profile covers the steps the time line's median does.
        if (KernelProfile *profile = backend.kernelProfile())
          profile->clear();
      } else {
        restMs.push_back(ms);
      }
    }
    // Rank 0's wall time per step, which includes writing the batch, the
    // loss's all-reduce and printing; the first step (warm-up: cuBLAS and
    // NCCL set themselves up) apart, then the median and the mean.
    if (rank == 0 && inputs.steps > 0) {
      if (!restMs.empty()) {
        double mean = 0;
        for (double ms : restMs)
          mean += ms;
        mean /= double(restMs.size());
        std::vector<double> sorted = restMs;
        std::sort(sorted.begin(), sorted.end());
        size_t n = sorted.size();
        double median =
            n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        std::printf("time: first step %.3f ms, then median %.3f ms, mean "
                    "%.3f ms per step over steps 2-%lld (rank 0's wall "
                    "time, the loss's all-reduce and printing included)\n",
                    firstMs, median, mean, (long long)inputs.steps);
        if (KernelProfile *profile = backend.kernelProfile())
          std::fputs(profile->report(restMs.size(), mean / 1e3).c_str(),
                     stdout);
      } else {
        std::printf("time: first step %.3f ms\n", firstMs);
        if (backend.kernelProfile())
          std::printf("profile: needs 2 steps or more (the first, a "
                      "warm-up, is left out)\n");
      }
      std::fflush(stdout);
    }
  }
  if (o.faultAtEnd && rank == o.faultRank) {
    if (o.fault == "hang")
      for (;;)
        std::this_thread::sleep_for(std::chrono::seconds(1));
    std::raise(SIGKILL);
  }
  setEndTimeout(o.timeout);
  endPhase("freeing the loss's communicator after the last step");
  MPI_Comm_free(&lossComm);
}
