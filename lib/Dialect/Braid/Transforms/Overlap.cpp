//===- Overlap.cpp - the overlap pipeline -----------------------*- C++ -*-===//
//
// Runs bucket-gradients, async-collectives, schedule, assign-streams and
// verify-schedule, forwarding their options.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Pass/PassManager.h"

#define DEBUG_TYPE "braid-overlap"

namespace braid {
#define GEN_PASS_DEF_OVERLAP
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct OverlapPass : public braid::impl::OverlapBase<OverlapPass> {
  using OverlapBase::OverlapBase;

  void runOnOperation() override {
    OpPassManager pm(ModuleOp::getOperationName());
    BucketGradientsOptions bucket;
    bucket.bucketCapMb = bucketCapMb;
    bucket.firstBucketCapMb = firstBucketCapMb;
    bucket.splitLarge = splitLarge;
    bucket.report = report;
    pm.addPass(createBucketGradients(bucket));
    pm.addPass(createAsyncCollectives());
    ScheduleOptions schedule;
    schedule.maxLiveIncrease = maxLiveIncrease;
    schedule.report = report;
    pm.addPass(createSchedule(schedule));
    AssignStreamsOptions streams;
    streams.commStreams = commStreams;
    pm.addPass(createAssignStreams(streams));
    pm.addPass(createVerifySchedule());
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};

} // namespace
