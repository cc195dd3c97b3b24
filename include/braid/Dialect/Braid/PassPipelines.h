//===- PassPipelines.h - braid's pass pipelines -----------------*- C++ -*-===//
//
// The two pipelines, with typed options: braid-overlap (bucket, start early,
// schedule, assign streams, verify) and the default pipeline of
// braid-compile (braid-overlap, then the memory plan and a last check).
// braid-opt registers braid-overlap; braid-compile fills the same options
// from its command line and calls buildCompilePipeline. Each option is
// checked once, by the pass it reaches (the enum by its parser).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_PASSPIPELINES_H
#define BRAID_DIALECT_BRAID_PASSPIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>
#include <vector>

namespace braid {

/// The schedules braid-overlap makes.
enum class OverlapSchedule {
  /// Bucket, start early, reorder, each bucket's updates after its wait.
  Braid,
  /// PyTorch DDP's: bucket, start early, every wait before the updates.
  Ddp,
  /// One synchronous all-reduce per group after the backward.
  Naive,
  /// Megatron-LM's: DDP's for the gradients, the tensor-parallel
  /// collectives synchronous on the compute stream.
  Megatron,
  /// Megatron-LM's with its asynchronous tensor-parallel backward: the
  /// forward's tensor-parallel collectives synchronous, the backward's
  /// overlapping its matmuls.
  MegatronAsync
};

struct OverlapPipelineOptions
    : public mlir::PassPipelineOptions<OverlapPipelineOptions> {
  Option<OverlapSchedule> schedule{
      *this, "schedule", llvm::cl::desc("The kind of schedule"),
      llvm::cl::init(OverlapSchedule::Braid),
      llvm::cl::values(
          clEnumValN(OverlapSchedule::Braid, "braid",
                     "bucket, start early, reorder, optimizer per bucket"),
          clEnumValN(OverlapSchedule::Ddp, "ddp",
                     "bucket, start early, optimizer after every wait, no "
                     "reordering (PyTorch DDP)"),
          clEnumValN(OverlapSchedule::Naive, "naive",
                     "one all-reduce per group after the backward"),
          clEnumValN(OverlapSchedule::Megatron, "megatron",
                     "ddp's for the gradients, tensor-parallel collectives "
                     "synchronous on the compute stream (Megatron-LM)"),
          clEnumValN(OverlapSchedule::MegatronAsync, "megatron-async",
                     "megatron's with the backward's tensor-parallel "
                     "collectives overlapping its matmuls (Megatron-LM with "
                     "sequence parallelism as it ships)"))};
  Option<double> bucketCapMb{
      *this, "bucket-cap-mb",
      llvm::cl::desc("Most MiB of gradients in one bucket (inf: no cap)"),
      llvm::cl::init(25.0)};
  Option<bool> autoBucketCap{
      *this, "auto-bucket-cap",
      llvm::cl::desc("Size the buckets from the cost model of `cluster` "
                     "(bucket-cap-mb is then not used)"),
      llvm::cl::init(false)};
  Option<std::string> cluster{
      *this, "cluster",
      llvm::cl::desc("The cluster for auto-bucket-cap (default: the "
                     "module's braid.cluster, else h100-8)"),
      llvm::cl::init("")};
  Option<double> firstBucketCapMb{
      *this, "first-bucket-cap-mb",
      llvm::cl::desc("Most MiB of gradients in the first bucket of each group"),
      llvm::cl::init(1.0)};
  Option<bool> splitLarge{
      *this, "split-large",
      llvm::cl::desc(
          "Cut gradients larger than the cap into chunks of at most the cap"),
      llvm::cl::init(false)};
  Option<double> maxLiveIncrease{
      *this, "max-live-increase",
      llvm::cl::desc("Largest allowed increase of peak live bytes, in percent"),
      llvm::cl::init(10.0)};
  Option<unsigned> commStreams{
      *this, "comm-streams",
      llvm::cl::desc("Number of communication streams (1 to 64)"),
      llvm::cl::init(1)};
  Option<bool> streamPerGroup{
      *this, "stream-per-group",
      llvm::cl::desc("At least one communication stream per collective group "
                     "(braid-compile's default unless --comm-streams is "
                     "given)"),
      llvm::cl::init(false)};
  Option<bool> verify{
      *this, "verify",
      llvm::cl::desc("End with braid-verify-schedule (braid-compile runs it "
                     "once, after the memory plan)"),
      llvm::cl::init(true)};
  Option<bool> report{
      *this, "report",
      llvm::cl::desc("Report buckets and peak live bytes as remarks"),
      llvm::cl::init(false)};
};

/// Adds braid-overlap's passes, configured by `options`, to `pm`.
void buildOverlapPipeline(mlir::OpPassManager &pm,
                          const OverlapPipelineOptions &options);

/// What braid-compile runs: braid-overlap (unless `overlap` is false: the
/// schedule as written), braid-plan-memory and braid-verify-schedule.
struct CompilePipelineOptions {
  bool overlap = true;
  bool report = false;
  /// braid-sequence-parallel after braid-tensor-parallel (a step that is
  /// not tensor-parallel is not changed).
  bool sequenceParallel = true;
  /// Its `regather` option: false keeps each gathered copy for the
  /// backward instead of gathering it again.
  bool regather = true;
  /// braid-collective-matmul after them: "off", "on" (every site) or "auto"
  /// (where the cost model of the module's cluster predicts a gain).
  std::string collectiveMatmul = "off";
  /// braid-shard-data-parallel's stage after them: 0 (not run), 1 or 2.
  unsigned zeroStage = 0;
  /// braid-fuse-kernels after the parallelism passes.
  bool fuse = true;
  /// braid-pipeline first, when the step is to be split into stages: with
  /// these options, those at their defaults taken from the module's
  /// `braid.pipeline` when it has one.
  bool pipeline = false;
  int64_t pipelineAxis = -1;
  int64_t microBatches = 1;
  std::string pipelineSchedule = "1f1b";
  int64_t virtualStages = 1;
  std::vector<std::string> stageBoundaries;
};
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const OverlapPipelineOptions &overlapOptions,
                          const CompilePipelineOptions &options);

/// Registers braid-overlap with braid-opt's pass pipelines.
void registerBraidPipelines();

} // namespace braid

#endif // BRAID_DIALECT_BRAID_PASSPIPELINES_H
