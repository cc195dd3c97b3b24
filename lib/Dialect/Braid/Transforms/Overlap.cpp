//===- Overlap.cpp - the overlap pipeline -----------------------*- C++ -*-===//
//
// Runs bucket-gradients, async-collectives, schedule, assign-streams and
// verify-schedule, forwarding their options.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <cmath>

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
    if (schedule != "braid" && schedule != "ddp" && schedule != "naive") {
      getOperation().emitError() << "schedule must be braid, ddp or naive, "
                                    "but is '"
                                 << schedule << "'";
      return signalPassFailure();
    }
    OpPassManager pm(ModuleOp::getOperationName());
    BucketGradientsOptions bucket;
    bucket.bucketCapMb = bucketCapMb;
    bucket.firstBucketCapMb = firstBucketCapMb;
    bucket.splitLarge = splitLarge;
    bucket.cluster = cluster;
    bucket.report = report;
    if (schedule == "naive") {
      // One bucket per group, reduced synchronously after the backward.
      bucket.bucketCapMb = "inf";
      bucket.firstBucketCapMb = INFINITY;
      bucket.splitLarge = false;
    }
    pm.addPass(createBucketGradients(bucket));
    if (schedule != "naive") {
      pm.addPass(createAsyncCollectives());
      ScheduleOptions options;
      options.maxLiveIncrease = maxLiveIncrease;
      options.ddp = schedule == "ddp";
      options.report = report;
      pm.addPass(createSchedule(options));
    }
    AssignStreamsOptions streams;
    streams.commStreams = commStreams;
    pm.addPass(createAssignStreams(streams));
    if (verify)
      pm.addPass(createVerifySchedule());
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};

} // namespace
