//===- PassPipelines.cpp - braid-overlap and braid-compile's pipeline -----===//
//
// braid-compile's pipeline starts with canonicalize, braid-pipeline where
// asked, braid-tensor-parallel and braid-sequence-parallel (a step without
// sharded parameters is not changed), then canonicalize and cse, then
// braid-fuse-kernels. braid-overlap
// runs bucket-gradients, async-collectives, schedule, assign-streams and
// verify-schedule; its schedule option picks the kind (docs/Overlap.md
// shows the MLP step before and after, docs/Benchmarks.md compares the
// three). The pipeline is idempotent.
//
//===----------------------------------------------------------------------===//

#include "braid/Dialect/Braid/PassPipelines.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include <cmath>

using namespace mlir;
using namespace braid;

/// braid-overlap's passes, ending with braid-verify-schedule if `verify`.
static void addOverlapPasses(OpPassManager &pm,
                             const OverlapPipelineOptions &options,
                             bool verify) {
  bool naive = options.schedule == OverlapSchedule::Naive;
  BucketGradientsOptions bucket;
  bucket.bucketCapMb = options.bucketCapMb;
  bucket.autoBucketCap = options.autoBucketCap;
  bucket.firstBucketCapMb = options.firstBucketCapMb;
  bucket.splitLarge = options.splitLarge;
  bucket.cluster = options.cluster;
  bucket.report = options.report;
  if (naive) {
    // One bucket per group, reduced synchronously after the backward.
    bucket.bucketCapMb = INFINITY;
    bucket.autoBucketCap = false;
    bucket.firstBucketCapMb = INFINITY;
    bucket.splitLarge = false;
  }
  pm.addPass(createBucketGradients(bucket));
  if (!naive) {
    AsyncCollectivesOptions async;
    async.gradientsOnly = options.schedule == OverlapSchedule::Megatron;
    async.forwardSync = options.schedule == OverlapSchedule::MegatronAsync;
    pm.addNestedPass<func::FuncOp>(createAsyncCollectives(async));
    ScheduleOptions schedule;
    schedule.maxLiveIncrease = options.maxLiveIncrease;
    schedule.ddp = options.schedule == OverlapSchedule::Ddp ||
                   options.schedule == OverlapSchedule::Megatron ||
                   options.schedule == OverlapSchedule::MegatronAsync;
    schedule.report = options.report;
    pm.addNestedPass<func::FuncOp>(createSchedule(schedule));
  }
  AssignStreamsOptions streams;
  streams.commStreams = options.commStreams;
  streams.streamPerGroup = options.streamPerGroup;
  pm.addPass(createAssignStreams(streams));
  if (verify)
    pm.addPass(createVerifySchedule());
}

void braid::buildOverlapPipeline(OpPassManager &pm,
                                 const OverlapPipelineOptions &options) {
  addOverlapPasses(pm, options, options.verify);
}

void braid::buildCompilePipeline(OpPassManager &pm,
                                 const OverlapPipelineOptions &overlapOptions,
                                 const CompilePipelineOptions &options) {
  // The ops' folders and canonicalization patterns first (the exporter
  // leaves transposes into matmuls and reshape chains to them), and again on
  // the per-rank program below. Constants stay where they are (moving them
  // all to the top would keep them alive the whole step in the memory
  // plan).
  GreedyRewriteConfig canonicalize;
  canonicalize.enableConstantCSE(false);
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass(canonicalize));
  // A pipelined step becomes its stage programs first, each then compiled
  // as a step of its own.
  if (options.pipeline) {
    PipelineOptions pipeline;
    pipeline.axis = options.pipelineAxis;
    pipeline.microBatches = options.microBatches;
    pipeline.schedule = options.pipelineSchedule;
    pipeline.virtualStages = options.virtualStages;
    pipeline.boundaries.assign(options.stageBoundaries.begin(),
                               options.stageBoundaries.end());
    pipeline.report = options.report;
    pm.addPass(createPipeline(pipeline));
  }
  // A step with sharded parameters becomes the per-rank program first; one
  // without is not changed.
  pm.addPass(createTensorParallel());
  if (options.sequenceParallel)
    pm.addNestedPass<func::FuncOp>(
        createSequenceParallel(SequenceParallelOptions{options.regather}));
  if (options.collectiveMatmul != "off") {
    CollectiveMatmulOptions ring;
    ring.mode = options.collectiveMatmul;
    ring.report = options.report;
    pm.addNestedPass<func::FuncOp>(createCollectiveMatmul(ring));
  }
  if (options.zeroStage > 0) {
    ShardDataParallelOptions zero;
    zero.stage = options.zeroStage;
    zero.report = options.report;
    pm.addNestedPass<func::FuncOp>(createShardDataParallel(zero));
  }
  // Canonicalize again, then one op for each repeated computation, on the
  // per-rank program.
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass(canonicalize));
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Folded before the scheduler and the memory plan see the ops.
  if (options.fuse)
    pm.addNestedPass<func::FuncOp>(createFuseKernels());
  if (options.overlap)
    // The schedule is checked once, below, with the memory plan.
    addOverlapPasses(pm, overlapOptions, /*verify=*/false);
  PlanMemoryOptions memory;
  memory.report = options.report;
  pm.addNestedPass<func::FuncOp>(createPlanMemory(memory));
  // An evaluation program into its step's arena (a no-op without one).
  ShareArenaOptions share;
  share.report = options.report;
  pm.addPass(createShareArena(share));
  pm.addPass(createVerifySchedule());
}

void braid::registerBraidPipelines() {
  PassPipelineRegistration<OverlapPipelineOptions>(
      "braid-overlap",
      "The overlap pipeline: bucket, async, schedule, assign streams, verify",
      buildOverlapPipeline);
}
