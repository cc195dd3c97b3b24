//===- braid-compile.cpp - one-shot driver: step IR to plan -----*- C++ -*-===//
//
//   braid-compile step.mlir -o step.plan
//       [--no-overlap | --schedule=braid|ddp|naive|megatron|megatron-async]
//       [--fuse=false]
//       [--cluster=NAME|FILE.json] [--collective-matmul=off|on|auto]
//       [--zero=0|1|2]
//       [--comm-streams=N] [--bucket-cap-mb=X|auto]
//       [--first-bucket-cap-mb=Y] [--emit=plan|mlir] [--report]
//       [--schedule-report=FILE.json]
//       [--mlir-print-ir-after=PASS | --mlir-print-ir-after-all]
//       [--mlir-timing]
//
// Parses the step, runs the default pipeline (braid-overlap, then
// braid-plan-memory and braid-verify-schedule; --no-overlap keeps the written
// schedule and skips braid-overlap) and writes the plan, as iree-compile or
// firtool do.
//
//===----------------------------------------------------------------------===//

#include "../ToolSupport.h"
#include "braid-common/CostModel.h"
#include "braid-common/PlanMemory.h"
#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/PassPipelines.h"
#include "braid/Dialect/Braid/Passes.h"
#include "braid/Target/Plan.h"
#include "braid/Target/ScheduleReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("braid-compile options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<step.mlir>"),
                                          cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("file"),
                                           cl::init("-"), cl::cat(category));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("Split the tokens between the tensor-parallel collectives of a "
             "tensor-parallel step (braid-sequence-parallel; default on, "
             "--sequence-parallel=false to compare)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> regather(
    "regather",
    cl::desc("With sequence parallelism, whether the backward gathers the "
             "saved layer-norm outputs again (true, as Megatron does) or "
             "keeps the forward's gathered copies (false: fewer all-gathers, "
             "the copies live to the backward); auto (default): keep them "
             "when the plan fits a GPU of --cluster, else gather again, and "
             "say so"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> collectiveMatmul(
    "collective-matmul",
    cl::desc("Decompose the all-gathers into matmuls and the matmuls into "
             "reduce-scatters into ring steps that overlap "
             "(braid-collective-matmul): off (default), on (every site) or "
             "auto (where the cost model of --cluster predicts a gain)"),
    cl::init("off"), cl::cat(category));
static cl::opt<unsigned> zeroStage(
    "zero",
    cl::desc("Shard the optimizer state over the data-parallel axis, as "
             "ZeRO does (braid-shard-data-parallel; "
             "docs/ShardedDataParallel.md): 0 (default, nothing sharded), 1 "
             "or 2 (the optimizer state; the gradients reduce-scattered)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> pipelineAxis(
    "pipeline-axis",
    cl::desc("Split the step into pipeline stages, one per coordinate of "
             "this axis of its grid (braid-pipeline; docs/Pipeline.md)"),
    cl::init(-1), cl::cat(category));
static cl::opt<int64_t>
    microBatches("micro-batches",
                 cl::desc("With --pipeline-axis: micro-batches per step, the "
                          "input step being one micro-batch's (default 1)"),
                 cl::init(1), cl::cat(category));
static cl::opt<std::string> pipelineSchedule(
    "pipeline-schedule",
    cl::desc("With --pipeline-axis: the order of a stage's micro-batches, "
             "gpipe, 1f1b (default), zb-h1 or interleaved"),
    cl::init("1f1b"), cl::cat(category));
static cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("With --pipeline-schedule=interleaved: virtual stages (model "
             "chunks) per rank, the step split into p x V stages (default 1; "
             "the interleaved schedule needs 2 or more)"),
    cl::init(1), cl::cat(category));
static cl::list<std::string> stageBoundaries(
    "stage-boundaries",
    cl::desc("With --pipeline-axis: the module starting each stage after "
             "the first, in parameter order (comma-separated)"),
    cl::CommaSeparated, cl::cat(category));
static cl::opt<bool> fuse(
    "fuse",
    cl::desc("Fold ops into the kernels that can run them (braid-fuse-kernels: "
             "attention's scale and causal mask into softmax; default on, "
             "--fuse=false to compare)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> noOverlap(
    "no-overlap",
    cl::desc("Keep the schedule as written (synchronous collectives, no "
             "streams): the naive baseline"),
    cl::cat(category));
static cl::opt<unsigned> commStreams("comm-streams",
                                     cl::desc("Communication streams (1..64)"),
                                     cl::init(1), cl::cat(category));
static cl::opt<std::string> bucketCapMb(
    "bucket-cap-mb",
    cl::desc("Gradient bucket cap in MiB, or 'auto' (default): bucket sizes "
             "chosen by the cost model of --cluster"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string>
    cluster("cluster",
            cl::desc("The cluster the schedule is made for: a preset "
                     "(a100-8, h100-8, h200-8, h100-8x8, h100-8x32) or a "
                     "JSON file (default: the input module's braid.cluster, "
                     "else h100-8); the plan records it"),
            cl::cat(category));
static cl::opt<braid::OverlapSchedule> schedule(
    "schedule", cl::desc("The schedule to make"),
    cl::init(braid::OverlapSchedule::Braid),
    cl::values(
        clEnumValN(braid::OverlapSchedule::Braid, "braid",
                   "braid's overlap schedule (default)"),
        clEnumValN(braid::OverlapSchedule::Ddp, "ddp",
                   "PyTorch DDP's (25 MiB buckets, 1 MiB first, optimizer "
                   "after every wait)"),
        clEnumValN(braid::OverlapSchedule::Naive, "naive",
                   "one all-reduce after the backward"),
        clEnumValN(braid::OverlapSchedule::Megatron, "megatron",
                   "ddp's for the gradients, the tensor-parallel collectives "
                   "synchronous on the compute stream (Megatron-LM)"),
        clEnumValN(braid::OverlapSchedule::MegatronAsync, "megatron-async",
                   "megatron's with the backward's tensor-parallel "
                   "collectives overlapping its matmuls (Megatron-LM with "
                   "sequence parallelism as it ships)")),
    cl::cat(category));
static cl::opt<double>
    firstBucketCapMb("first-bucket-cap-mb",
                     cl::desc("Cap of the first gradient bucket in MB"),
                     cl::init(1.0), cl::cat(category));
static cl::opt<bool> report("report",
                            cl::desc("Print the passes' reports as remarks"),
                            cl::cat(category));
static cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass (default: after parsing only)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> scheduleReport(
    "schedule-report",
    cl::desc("Also write the schedule's streams and gradient buckets as JSON "
             "(python3 -m braid.schedule prints it)"),
    cl::value_desc("file"), cl::cat(category));
enum class Emit { Plan, Mlir };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to write"), cl::init(Emit::Plan),
    cl::values(clEnumValN(Emit::Plan, "plan", "the runtime plan (default)"),
               clEnumValN(Emit::Mlir, "mlir",
                          "the scheduled, memory-planned IR")),
    cl::cat(category));

/// The memory a plan needs of one rank against a GPU of `clusterName`: the
/// figures the simulator reports (braid-runtime/PlanMemory.h). `checked` is
/// false where the cluster has no memory size (or does not load: the
/// passes have reported it) or the plan does not read back (with a
/// warning).
struct MemoryFit {
  bool checked = false;
  braid::plan::MemoryUse use;
  uint64_t capacity = 0;
  std::string clusterName, shortfall;
};

static MemoryFit fitOf(StringRef plan, StringRef clusterName) {
  MemoryFit fit;
  braid::cost::Cluster cluster;
  std::string error;
  if (!braid::cost::loadCluster(clusterName.str(), cluster, error) ||
      cluster.gpuMemoryBytes == 0)
    return fit;
  if (!braid::plan::planMemoryUse(
          reinterpret_cast<const uint8_t *>(plan.data()), plan.size(), fit.use,
          error)) {
    llvm::errs() << "braid-compile: warning: the plan's memory was not "
                    "checked: reading it back failed: "
                 << error << "\n";
    return fit;
  }
  fit.checked = true;
  fit.capacity = cluster.gpuMemoryBytes;
  fit.clusterName = cluster.name;
  fit.shortfall = braid::plan::memoryShortfall(fit.use, cluster.gpuMemoryBytes,
                                               cluster.gpu);
  return fit;
}

/// Warns when the plan's arena (one rank's device memory) exceeds a GPU of
/// its cluster, with what fills it. The plan is written all the same.
static void warnIfTooLarge(const MemoryFit &fit) {
  if (fit.checked && !fit.shortfall.empty())
    llvm::errs() << "braid-compile: warning: the plan does not fit cluster '"
                 << fit.clusterName << "': " << fit.shortfall << "\n";
}

static std::string gib(uint64_t bytes) {
  return llvm::formatv("{0:F2} GiB", double(bytes) / double(1ull << 30)).str();
}

/// Whether sequence parallelism split a function of `module` (it splits
/// those braid-tensor-parallel partitioned).
static bool sequenceParallelRan(ModuleOp module) {
  return llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp func) {
    return func->hasAttr(braid::BraidDialect::kTensorParallelAttrName);
  });
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Before the pass manager's options, which list the registered passes.
  braid::registerBraidPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv,
                              "braid-compile: a training step to a plan\n");

  // The options are checked once, by the passes they reach; only the
  // command line's own forms are checked here.
  bool autoCap = bucketCapMb == "auto";
  double cap = 25;
  if (!autoCap && StringRef(bucketCapMb).getAsDouble(cap)) {
    llvm::errs() << "braid-compile: error: --bucket-cap-mb must be a "
                    "number of MiB or 'auto', got '"
                 << bucketCapMb << "'\n";
    return 2;
  }
  if (noOverlap && schedule.getNumOccurrences()) {
    llvm::errs() << "braid-compile: error: --no-overlap keeps the written "
                    "schedule; it does not go with --schedule\n";
    return 2;
  }
  // The overlap options mean nothing without the overlap pipeline: say so
  // instead of dropping them.
  for (const cl::Option *option :
       {static_cast<const cl::Option *>(&commStreams),
        static_cast<const cl::Option *>(&bucketCapMb)}) {
    if (noOverlap && option->getNumOccurrences()) {
      llvm::errs() << "braid-compile: error: --no-overlap keeps the written "
                      "schedule (no buckets, no communication streams); it "
                      "does not go with --"
                   << option->ArgStr << "\n";
      return 2;
    }
  }

  // --mlir-timing times parsing, each pass, verification and output.
  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();

  DialectRegistry registry;
  registry
      .insert<braid::BraidDialect, func::FuncDialect, shard::ShardDialect>();
  // One thread: the passes work on the whole module, and without threads
  // the context uniques types and attributes without locks.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // An error names its op by location; the op itself (for an option error,
  // the whole module in generic form, megabytes for a large step) is printed
  // only when asked for with --mlir-print-op-on-diagnostic.
  if (!cl::getRegisteredOptions()["mlir-print-op-on-diagnostic"]
           ->getNumOccurrences())
    context.printOpOnDiagnostic(false);

  if (!braid::tools::checkInputFile(inputFilename))
    return 1;
  braid::tools::installCrashNote("braid-compile", inputFilename);
  std::string message;
  auto input = openInputFile(inputFilename, &message);
  if (!input) {
    llvm::errs() << "braid-compile: error: " << message << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  TimingScope parseTiming = timing.nest("Parser");
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  parseTiming.stop();
  if (!module)
    return 1;

  // The cluster travels in the IR (and into the plan): --cluster, else the
  // input's own, else the default.
  StringRef clusterName = cluster;
  if (cluster.getNumOccurrences() == 0) {
    auto own = (*module)->getAttrOfType<StringAttr>(
        braid::BraidDialect::kClusterAttrName);
    clusterName = own ? own.getValue() : StringRef("h100-8");
  }
  (*module)->setAttr(braid::BraidDialect::kClusterAttrName,
                     StringAttr::get(&context, clusterName));

  braid::OverlapPipelineOptions overlap;
  overlap.schedule = schedule;
  overlap.commStreams = commStreams;
  // A stream per collective group unless told how many: the tensor-parallel
  // all-reduces of a step do not wait behind its gradient buckets.
  overlap.streamPerGroup = commStreams.getNumOccurrences() == 0;
  overlap.firstBucketCapMb = firstBucketCapMb;
  overlap.report = report;
  if ((schedule == braid::OverlapSchedule::Ddp ||
       schedule == braid::OverlapSchedule::Megatron ||
       schedule == braid::OverlapSchedule::MegatronAsync) &&
      bucketCapMb.getNumOccurrences() == 0) {
    // DDP's own bucket cap, unless given (Megatron's gradients go through
    // DDP too).
    overlap.bucketCapMb = 25;
  } else {
    overlap.autoBucketCap = autoCap;
    overlap.bucketCapMb = cap;
  }
  braid::CompilePipelineOptions compile;
  compile.overlap = !noOverlap;
  compile.sequenceParallel = sequenceParallel;
  if (collectiveMatmul != "off" && collectiveMatmul != "on" &&
      collectiveMatmul != "auto") {
    llvm::errs() << "braid-compile: error: --collective-matmul must be off, "
                    "on or auto, but is '"
                 << collectiveMatmul << "'\n";
    return 1;
  }
  compile.collectiveMatmul = collectiveMatmul;
  // A module that asks for a ZeRO stage (braid.models --zero,
  // braid.export's zero_stage) says so in `braid.zero_stage`; --zero
  // overrides it.
  unsigned zero = zeroStage;
  if (zeroStage.getNumOccurrences() == 0)
    if (auto asked = (*module)->getAttrOfType<IntegerAttr>(
            braid::BraidDialect::kZeroStageAttrName))
      zero = unsigned(asked.getInt());
  if (zero > 2) {
    llvm::errs() << "braid-compile: error: --zero must be 0, 1 or 2, but is "
                 << zero
                 << " (stage 3, sharded parameters, is not built yet)\n";
    return 1;
  }
  compile.zeroStage = zero;
  if (regather != "true" && regather != "false" && regather != "auto") {
    llvm::errs() << "braid-compile: error: --regather must be true, false or "
                    "auto, but is '"
                 << regather << "'\n";
    return 1;
  }
  // auto: first with the gathered copies kept; gathered again only if that
  // plan does not fit (below).
  bool regatherAuto = regather == "auto" && sequenceParallel;
  compile.regather = regather == "true";
  // The input as parsed, for a second compile.
  OwningOpRef<ModuleOp> original;
  if (regatherAuto)
    original = module->clone();
  compile.fuse = fuse;
  // A module that asks to be pipelined (braid.models --pp, braid.export)
  // says how in `braid.pipeline`; the options override it.
  compile.pipeline = pipelineAxis >= 0 ||
                     (*module)->hasAttr(braid::BraidDialect::kPipelineAttrName);
  if ((microBatches.getNumOccurrences() ||
       pipelineSchedule.getNumOccurrences() ||
       stageBoundaries.getNumOccurrences() ||
       virtualStages.getNumOccurrences()) &&
      !compile.pipeline) {
    llvm::errs() << "braid-compile: error: --micro-batches, "
                    "--pipeline-schedule, --virtual-stages and "
                    "--stage-boundaries need --pipeline-axis (or a module "
                    "with braid.pipeline)\n";
    return 1;
  }
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"micro-batches", microBatches},
        {"virtual-stages", virtualStages}})
    if (value < 1 || value > braid::BraidDialect::kMaxMicroBatches) {
      llvm::errs() << "braid-compile: error: --" << name << " must be 1 to "
                   << braid::BraidDialect::kMaxMicroBatches << ", but is "
                   << value << "\n";
      return 1;
    }
  compile.pipelineAxis = pipelineAxis;
  compile.microBatches = microBatches;
  compile.pipelineSchedule = pipelineSchedule;
  compile.virtualStages = virtualStages;
  compile.stageBoundaries.assign(stageBoundaries.begin(),
                                 stageBoundaries.end());
  compile.report = report;
  auto compileModule = [&](ModuleOp target) -> LogicalResult {
    PassManager pm(&context);
    // The input is verified by the parser; the passes are trusted to keep
    // it valid (the test suite compiles with --verify-each, which verifies
    // after every pass as braid-opt does). Verifying after each pass costs
    // a third of the compile time of a 100k-op step.
    pm.enableVerifier(verifyEach);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.enableTiming(timing);
    braid::buildCompilePipeline(pm, overlap, compile);
    return pm.run(target);
  };
  if (failed(compileModule(*module)))
    return 1;
  auto translate = [&](ModuleOp target, std::string &plan) {
    plan.clear();
    llvm::raw_string_ostream planStream(plan);
    return braid::translateToPlan(target, planStream);
  };
  std::string plan;
  std::optional<MemoryFit> fit;
  if (regatherAuto && sequenceParallelRan(*module)) {
    // --regather=auto: the kept copies cost memory, the re-gathers time;
    // the memory plan says whether the copies fit.
    if (failed(translate(*module, plan)))
      return 1;
    MemoryFit kept = fitOf(plan, clusterName);
    fit = kept;
    if (kept.checked && !kept.shortfall.empty()) {
      // Over: gathering again frees the copies between the forward and
      // the backward, but holds the re-gathered ones while the backward
      // reads them; take whichever plan needs less.
      compile.regather = true;
      std::string again;
      if (failed(compileModule(*original)) ||
          failed(translate(*original, again)))
        return 1;
      MemoryFit regathered = fitOf(again, clusterName);
      bool less = regathered.checked && regathered.use.total < kept.use.total;
      llvm::errs() << "braid-compile: note: --regather=auto: the plan that "
                      "keeps the forward's gathered layer-norm outputs needs "
                   << gib(kept.use.total) << " a rank, over the "
                   << gib(kept.capacity) << " of a GPU of '" << kept.clusterName
                   << "'; gathering them again in the backward needs "
                   << (regathered.checked ? gib(regathered.use.total)
                                          : std::string("an unknown amount"))
                   << ": " << (less ? "gathering again" : "keeping them")
                   << "\n";
      if (less) {
        module = std::move(original);
        plan = std::move(again);
        fit = regathered;
      }
    } else if (report && kept.checked) {
      llvm::errs() << "braid-compile: note: --regather=auto: sequence "
                      "parallelism keeps the forward's gathered layer-norm "
                      "outputs for the backward: the plan needs "
                   << gib(kept.use.total) << " a rank of the "
                   << gib(kept.capacity) << " of a GPU of '" << kept.clusterName
                   << "'\n";
    }
  }
  TimingScope outputTiming = timing.nest("Output");
  if (!scheduleReport.empty()) {
    auto file = openOutputFile(scheduleReport, &message);
    if (!file) {
      llvm::errs() << "braid-compile: error: " << message << "\n";
      return 1;
    }
    if (failed(braid::writeScheduleReport(*module, file->os())))
      return 1;
    file->keep();
  }

  auto output = openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << "braid-compile: error: " << message << "\n";
    return 1;
  }
  if (emit == Emit::Mlir) {
    module->print(output->os());
  } else {
    if (!fit) {
      if (failed(translate(*module, plan)))
        return 1;
      fit = fitOf(plan, clusterName);
    }
    output->os() << plan;
    warnIfTooLarge(*fit);
  }
  output->keep();
  outputTiming.stop();
  // The process ends here: skip tearing down the IR op by op (a tenth of
  // the compile time of a large step), as clang does with -disable-free.
  (void)module.release();
  return 0;
}
