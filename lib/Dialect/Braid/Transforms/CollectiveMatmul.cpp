//===- CollectiveMatmul.cpp - ring steps for collective + matmul -*- C++
//-*-===//
//
// An all-gather feeding matmuls, and a matmul feeding a reduce-scatter,
// become ring steps on braid.collective_permute whose products overlap the
// transfers (Wang et al., ASPLOS'23). Two rewrite patterns, one per site
// kind; mode=auto asks the cost model first.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"
#include "ScheduleUtils.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "braid-collective-matmul"

namespace braid {
#define GEN_PASS_DEF_COLLECTIVEMATMUL
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

/// What a dimension of a matmul's operand or result is in the product
/// `[batch..., m, k] x [k, n]`.
enum class Role { Batch, M, N, K };

/// The role of dimension `dim` of operand `operand` (0: lhs, 1: rhs).
Role operandRole(MatmulOp mm, unsigned operand, int64_t dim) {
  int64_t rank =
      cast<RankedTensorType>(mm->getOperand(operand).getType()).getRank();
  if (dim < rank - 2)
    return Role::Batch;
  bool second = dim == rank - 1;
  if (operand == 0)
    return second != mm.getTransposeA() ? Role::K : Role::M;
  return second != mm.getTransposeB() ? Role::N : Role::K;
}

/// The dimension of operand `operand` that has role `role` (a batch role:
/// `batchDim`), or -1 where the operand has none (a shared rank-2 weight's
/// batch, the lhs's n, the rhs's m).
int64_t operandDim(MatmulOp mm, unsigned operand, Role role, int64_t batchDim) {
  int64_t rank =
      cast<RankedTensorType>(mm->getOperand(operand).getType()).getRank();
  int64_t resultRank = mm.getType().getRank();
  for (int64_t d = 0; d < rank; ++d)
    if (operandRole(mm, operand, d) == role &&
        (role != Role::Batch || d == batchDim - (resultRank - rank)))
      return d;
  return -1;
}

/// The role of dimension `dim` of the product.
Role resultRole(MatmulOp mm, int64_t dim) {
  int64_t rank = mm.getType().getRank();
  return dim < rank - 2 ? Role::Batch : dim == rank - 2 ? Role::M : Role::N;
}

/// A matmul the ring can cut: its operands read as they are.
bool plainMatmul(MatmulOp mm) {
  return !mm.getLhsPermutation() && !mm.getRhsPermutation() &&
         !mm.getResultPermutation() && !mm.getLhsSlice() && !mm.getRhsSlice();
}

/// The ranks of a collective's group, or 0 where the grid is not static.
int64_t groupSize(CollectiveOpInterface op) {
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid)
    return 0;
  int64_t size = 1;
  for (int16_t axis : op.getGridAxes()) {
    if (axis < 0 || axis >= int64_t(grid.getShape().size()) ||
        ShapedType::isDynamic(grid.getShape()[axis]))
      return 0;
    size *= grid.getShape()[axis];
  }
  return size;
}

/// This rank's index in the group of `collective`: its function's one
/// braid.axis_index of the group.
Value axisIndex(CollectiveOpInterface collective) {
  return getOrCreateAxisIndex(
      collective->getParentOfType<FunctionOpInterface>(),
      collective.getGridAttr(), collective.getGridAxes());
}

/// Every permute of a ring sends to the rank one ahead.
IntegerAttr ringOffset(OpBuilder &b) {
  return b.getIntegerAttr(b.getIntegerType(64, /*isSigned=*/true), 1);
}

/// The type of `type` with dimension `dim` cut into `parts`.
RankedTensorType pieceType(Type type, int64_t dim, int64_t parts) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] /= parts;
  return tensor.clone(shape);
}

uint64_t bytesOf(Type type) {
  return getTensorBytes(cast<RankedTensorType>(type));
}

/// The decision the pass makes at a site, and the figures behind it.
struct Decision {
  bool decompose = true;
  double plainSeconds = 0, ringSeconds = 0;
};

/// What the patterns share: the mode, the cluster of mode=auto, and the
/// counts the pass reports.
struct Context {
  bool automatic = false;
  bool report = false;
  std::optional<cost::Cluster> cluster;
  unsigned allGathers = 0, reduceScatters = 0, kept = 0;
  /// The sites decided so far (the driver may offer a kept site again).
  llvm::DenseSet<Operation *> decided;

  /// Seconds of a matmul like `mm` with the dimensions of role `role` cut
  /// into `t`: its flops and each operand's and the result's bytes that hold
  /// the role divided by t.
  double pieceSeconds(MatmulOp mm, Role role, int64_t t) const {
    cost::ProductShape p = mm.getProductShape();
    uint64_t *cut = role == Role::Batch ? &p.batch
                    : role == Role::M   ? &p.m
                    : role == Role::N   ? &p.n
                                        : &p.k;
    *cut /= uint64_t(t);
    auto share = [&](unsigned operand) {
      return bytesOf(mm->getOperand(operand).getType()) /
             (operandDim(mm, operand, role, 0) >= 0 ? uint64_t(t) : 1);
    };
    uint64_t bytes =
        share(0) + share(1) + bytesOf(mm.getType()) / (role == Role::K ? 1 : t);
    DType dtype = getCostType(mm.getType().getElementType());
    return cost::kernelSeconds(*cluster, 2 * p.batch * p.m * p.n * p.k, bytes,
                               dtype, p);
  }

  /// Seconds of a copy (a join, a slice) or a sum of `bytes` each way.
  double moveSeconds(uint64_t bytes) const {
    return cost::kernelSeconds(*cluster, 0, 2 * bytes, DType::F32);
  }

  /// The ring against the plain site: `collective` alone then (or after)
  /// the whole products `whole`; the ring's `t - 1` overlapped steps each
  /// the slower of a piece's products and one permute of `permuteBytes`,
  /// both slowed by the other, plus one step alone and the ring's `extra`.
  Decision decide(CollectiveOpInterface collective, double whole, double piece,
                  uint64_t permuteBytes, double extra, int64_t t) const {
    cost::GroupShape group = getGroupShape(collective, *cluster);
    double plain = whole + cost::collectiveSeconds(
                               *cluster, collective.getCollectiveKind(),
                               collective.getCommBytes(), group);
    double permute = cost::collectiveSeconds(*cluster, CollectiveKind::Permute,
                                             permuteBytes, group);
    double step = std::max(piece * (1 + cluster->computeSlowdownDuringComm),
                           permute * (1 + cluster->commSlowdownDuringCompute));
    double ring = double(t - 1) * step + piece + extra;
    return {ring < plain, plain, ring};
  }

  /// Counts a site kept and, when asked, remarks the decision: once a site.
  void note(Operation *op, StringRef what, const Decision &d) {
    if (!decided.insert(op).second)
      return;
    if (!d.decompose)
      ++kept;
    if (!report)
      return;
    InFlightDiagnostic diag = op->emitRemark()
                              << "collective matmul: " << what << " "
                              << (d.decompose ? "decomposed" : "kept whole");
    if (automatic)
      diag << llvm::formatv(" (predicted {0:F1} us as a ring, {1:F1} us whole)",
                            d.ringSeconds * 1e6, d.plainSeconds * 1e6)
                  .str();
  }
};

/// The operand of `mm` that reads `value`, and its role; none when `mm`
/// reads it twice or through permutations or slices.
std::optional<std::pair<unsigned, Role>>
gatheredOperand(MatmulOp mm, Value value, int64_t dim) {
  if (!plainMatmul(mm) || mm.getLhs() == mm.getRhs())
    return std::nullopt;
  unsigned operand = mm.getLhs() == value ? 0 : 1;
  Role role = operandRole(mm, operand, dim);
  // A batch dimension both operands have would cut the other one too.
  if (role == Role::Batch &&
      cast<RankedTensorType>(mm->getOperand(1 - operand).getType()).getRank() >
          2)
    return std::nullopt;
  return std::make_pair(operand, role);
}

/// The dimension of the product that operand `operand`'s role `role`
/// (dimension `dim`) becomes.
int64_t resultDimOf(MatmulOp mm, unsigned operand, Role role, int64_t dim) {
  int64_t rank = mm.getType().getRank();
  int64_t operandRank =
      cast<RankedTensorType>(mm->getOperand(operand).getType()).getRank();
  return role == Role::Batch ? dim + (rank - operandRank)
         : role == Role::M   ? rank - 2
                             : rank - 1;
}

/// An all-gather read by a matmul along a row (or batch, or column)
/// dimension of its product becomes a ring: rank `i` multiplies the piece
/// it holds while passing it on, and holds rank `i - k`'s piece after `k`
/// steps; the products are joined. The gather's other readers (a weight
/// gradient contracting the tokens, a bias gradient's sum, a reader further
/// on) read the pieces joined once the ring has run: one copy, where t
/// products summed would add t - 1 sums of the whole result.
struct AllGatherRing : OpRewritePattern<AllGatherOp> {
  AllGatherRing(MLIRContext *ctx, Context &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(AllGatherOp gather,
                                PatternRewriter &rewriter) const override {
    int64_t t = groupSize(gather);
    int64_t dim = gather.getGatherDim();
    if (t < 2)
      return failure();
    // The matmuls that multiply the pieces as they come: the gathered
    // dimension is one of their product's, and their other operand is
    // ready at the gather.
    struct Stepped {
      MatmulOp mm;
      unsigned operand;
      Role role;
    };
    SmallVector<Stepped> stepped;
    SmallVector<Operation *> others;
    DominanceInfo dominance;
    for (Operation *user : gather->getUsers()) {
      if (llvm::is_contained(others, user) ||
          llvm::any_of(stepped, [&](const Stepped &s) { return s.mm == user; }))
        continue;
      auto mm = dyn_cast<MatmulOp>(user);
      auto found =
          mm ? gatheredOperand(mm, gather.getResult(), dim) : std::nullopt;
      if (found && found->second != Role::K &&
          dominance.properlyDominates(mm->getOperand(1 - found->first), gather))
        stepped.push_back({mm, found->first, found->second});
      else
        others.push_back(user);
    }
    if (stepped.empty())
      return rewriter.notifyMatchFailure(gather, "no matmul to overlap");
    // In program order (a value's users are listed last first).
    auto before = [](Operation *a, Operation *b) {
      return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
    };
    llvm::stable_sort(stepped,
                      [&](Stepped a, Stepped b) { return before(a.mm, b.mm); });
    llvm::stable_sort(others, before);

    Decision d;
    if (context.automatic) {
      double whole = 0, piece = 0, extra = 0;
      for (Stepped &s : stepped) {
        whole += getOpSeconds(s.mm, *context.cluster);
        piece += context.pieceSeconds(s.mm, s.role, t);
        extra += context.moveSeconds(bytesOf(s.mm.getType()));
      }
      if (!others.empty())
        extra += context.moveSeconds(bytesOf(gather.getType()));
      d = context.decide(gather, whole, piece,
                         bytesOf(gather.getInput().getType()), extra, t);
    }
    std::string readers;
    llvm::raw_string_ostream readersOs(readers);
    llvm::interleaveComma(stepped, readersOs, [&](const Stepped &s) {
      readersOs << MatmulOp(s.mm).getType();
    });
    context.note(gather,
                 llvm::formatv("all_gather ({0} a rank, {1}, into matmuls "
                               "of {2})",
                               gather.getInput().getType(),
                               humanBytes(bytesOf(gather.getInput().getType())),
                               readers)
                     .str(),
                 d);
    if (!d.decompose)
      return failure();

    Location loc = gather.getLoc();
    rewriter.setInsertionPoint(gather);
    Value index = axisIndex(gather);
    // Piece k: what rank i - k started with, passed on while the stepped
    // matmuls multiply it.
    SmallVector<int64_t> shifts;
    SmallVector<Value> pieces{gather.getInput()};
    SmallVector<SmallVector<Value>> products(stepped.size());
    for (int64_t k = 0; k < t; ++k) {
      shifts.push_back(-k);
      if (k + 1 < t)
        pieces.push_back(CollectivePermuteOp::create(
            rewriter, loc, pieces[k].getType(), pieces[k], gather.getGridAttr(),
            gather.getGridAxesAttr(), ringOffset(rewriter)));
      for (auto [i, s] : llvm::enumerate(stepped)) {
        SmallVector<Value, 2> operands(s.mm->getOperands());
        operands[s.operand] = pieces[k];
        products[i].push_back(
            MatmulOp::create(rewriter, loc, operands, s.mm->getAttrs()));
      }
    }
    for (auto [i, s] : llvm::enumerate(stepped)) {
      rewriter.setInsertionPoint(s.mm);
      rewriter.replaceOp(
          s.mm, ShardConcatOp::create(rewriter, loc, products[i], index,
                                      resultDimOf(s.mm, s.operand, s.role, dim),
                                      shifts));
    }
    if (!others.empty()) {
      // Joined where first read, to keep the whole value's life short.
      if (others.front()->getBlock() == gather->getBlock())
        rewriter.setInsertionPoint(others.front());
      Value joined =
          ShardConcatOp::create(rewriter, loc, pieces, index, dim, shifts);
      rewriter.replaceAllUsesWith(gather.getResult(), joined);
    }
    rewriter.eraseOp(gather);
    ++context.allGathers;
    return success();
  }

  Context &context;
};

/// Where a collective over `t` ranks can move across a reshape: the
/// outermost dimension of `moved` (the reshape's side the collective moves
/// to), when it divides by `t` and the collective's dimension `dim` is the
/// outermost of `whole` (its side now), so that the blocks are the same on
/// both sides; -1 where they are not.
int64_t blockDimAcrossReshape(RankedTensorType moved, RankedTensorType whole,
                              int64_t dim, int64_t t) {
  int64_t outer = outermostDim(moved.getShape());
  if (t < 2 || outer < 0 || moved.getDimSize(outer) % t ||
      outermostDim(whole.getShape()) != dim)
    return -1;
  return outer;
}

/// A reshape of an all-gather's result, its one reader, becomes the gather
/// of the pieces reshaped where the pieces are the reshaped value's blocks
/// (the gathered dimension the outermost, and the reshape's outermost
/// dividing by the group): the exporter flattens [batch, seq, hidden] to
/// [tokens, hidden] before a matmul, and the ring then finds the matmul
/// behind the gather. The bytes sent are the same.
struct GatherBeforeReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto gather = reshape.getInput().getDefiningOp<AllGatherOp>();
    if (!gather || !gather->hasOneUse())
      return failure();
    int64_t t = groupSize(gather);
    auto to = cast<RankedTensorType>(reshape.getType());
    int64_t dim =
        blockDimAcrossReshape(to, gather.getType(), gather.getGatherDim(), t);
    if (dim < 0)
      return failure();
    Value piece = ReshapeOp::create(rewriter, reshape.getLoc(),
                                    pieceType(to, dim, t), gather.getInput());
    rewriter.replaceOpWithNewOp<AllGatherOp>(
        reshape, to, piece, gather.getGridAttr(), gather.getGridAxesAttr(),
        rewriter.getI64IntegerAttr(dim));
    rewriter.eraseOp(gather);
    return success();
  }
};

/// A reduce-scatter of a reshape, its one reader, becomes the reshape of
/// the reduce-scatter of the reshape's input, where the blocks are the
/// same (the scattered dimension the outermost on both sides): the ring
/// then finds the matmul behind the reshape.
struct ScatterBeforeReshape : OpRewritePattern<ReduceScatterOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceScatterOp scatter,
                                PatternRewriter &rewriter) const override {
    auto reshape = scatter.getInput().getDefiningOp<ReshapeOp>();
    if (!reshape || !reshape->hasOneUse())
      return failure();
    int64_t t = groupSize(scatter);
    auto from = cast<RankedTensorType>(reshape.getInput().getType());
    int64_t dim =
        blockDimAcrossReshape(from, cast<RankedTensorType>(reshape.getType()),
                              scatter.getScatterDim(), t);
    if (dim < 0)
      return failure();
    Value scattered = ReduceScatterOp::create(
        rewriter, scatter.getLoc(), pieceType(from, dim, t), reshape.getInput(),
        scatter.getGridAttr(), scatter.getGridAxesAttr(),
        scatter.getReductionAttr(), rewriter.getI64IntegerAttr(dim),
        scatter.getGradOfAttr(), scatter.getBucketIndexAttr(),
        scatter.getBucketBytesAttr());
    rewriter.replaceOpWithNewOp<ReshapeOp>(scatter, scatter.getType(),
                                           scattered);
    rewriter.eraseOp(reshape);
    return success();
  }
};

/// A matmul whose one reader is a sum reduce-scatter becomes a ring: at
/// step k rank i computes the product for block i - k - 1, adds the partial
/// sum arriving from rank i - 1 and passes it on.
struct ReduceScatterRing : OpRewritePattern<ReduceScatterOp> {
  ReduceScatterRing(MLIRContext *ctx, Context &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(ReduceScatterOp scatter,
                                PatternRewriter &rewriter) const override {
    int64_t t = groupSize(scatter);
    // The product, or the product plus another partial sum (a Llama's
    // residual stream adds the row-parallel output to the vocabulary-
    // parallel embedding's before one reduce-scatter): each step adds the
    // addend's block to its product.
    Value addend;
    auto mm = scatter.getInput().getDefiningOp<MatmulOp>();
    if (auto add = scatter.getInput().getDefiningOp<AddOp>();
        add && add->hasOneUse()) {
      for (unsigned i = 0; i < 2 && !mm; ++i)
        if ((mm = add->getOperand(i).getDefiningOp<MatmulOp>()))
          addend = add->getOperand(1 - i);
    }
    if (t < 2 || !mm || !mm->hasOneUse() || !plainMatmul(mm) ||
        scatter.getReduction() != ReductionKind::Sum || scatter.getGradOf())
      return rewriter.notifyMatchFailure(scatter, "not a matmul's product");
    int64_t dim = scatter.getScatterDim();
    Role role = resultRole(mm, dim);
    // The operands that hold the scattered dimension: cut by each step.
    SmallVector<std::pair<unsigned, int64_t>, 2> cut;
    for (unsigned operand = 0; operand < 2; ++operand)
      if (int64_t d = operandDim(mm, operand, role, dim); d >= 0)
        cut.push_back({operand, d});

    Decision d;
    if (context.automatic) {
      double piece = context.pieceSeconds(mm, role, t);
      uint64_t block = bytesOf(scatter.getType());
      double extra =
          double(t - 1 + (addend ? 2 * t : 0)) * context.moveSeconds(block);
      for (auto [operand, d] : cut)
        extra +=
            context.moveSeconds(bytesOf(mm->getOperand(operand).getType()));
      d = context.decide(scatter, getOpSeconds(mm, *context.cluster), piece,
                         block, extra, t);
    }
    context.note(
        scatter,
        llvm::formatv("reduce_scatter (of a matmul's {0} product over k = "
                      "{1}{2}, {3} a block)",
                      mm.getType(), mm.getProductShape().k,
                      addend ? " plus an addend" : "",
                      humanBytes(bytesOf(scatter.getType())))
            .str(),
        d);
    if (!d.decompose)
      return failure();

    Location loc = scatter.getLoc();
    rewriter.setInsertionPoint(scatter);
    Value index = axisIndex(scatter);
    Value sum;
    for (int64_t k = 0; k < t; ++k) {
      SmallVector<Value, 2> operands(mm->getOperands());
      for (auto [operand, d] : cut)
        operands[operand] = ShardSliceOp::create(
            rewriter, loc, pieceType(operands[operand].getType(), d, t),
            operands[operand], index, d, t, -((k + 1) % t));
      Value product = MatmulOp::create(rewriter, loc, operands, mm->getAttrs());
      // Every rank's partial sum of the block has its addend's too.
      if (addend)
        product = AddOp::create(
            rewriter, loc, product,
            ShardSliceOp::create(rewriter, loc,
                                 pieceType(addend.getType(), dim, t), addend,
                                 index, dim, t, -((k + 1) % t)));
      if (!sum) {
        sum = product;
        continue;
      }
      Value arrived = CollectivePermuteOp::create(
          rewriter, loc, sum.getType(), sum, scatter.getGridAttr(),
          scatter.getGridAxesAttr(), ringOffset(rewriter));
      sum = AddOp::create(rewriter, loc, product, arrived);
    }
    Operation *input = scatter.getInput().getDefiningOp();
    rewriter.replaceOp(scatter, sum);
    rewriter.eraseOp(input);
    if (input != mm)
      rewriter.eraseOp(mm);
    ++context.reduceScatters;
    return success();
  }

  Context &context;
};

struct CollectiveMatmulPass
    : public braid::impl::CollectiveMatmulBase<CollectiveMatmulPass> {
  using CollectiveMatmulBase::CollectiveMatmulBase;
  void runOnOperation() override;
};

} // namespace

void CollectiveMatmulPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (mode != "on" && mode != "auto") {
    func.emitError() << "braid-collective-matmul: mode '" << mode
                     << "' is none of on, auto";
    return signalPassFailure();
  }
  WalkResult scheduled = func.walk([](WaitOp wait) {
    wait.emitError() << "braid-collective-matmul rewrites graph-level steps; '"
                     << wait->getName()
                     << "' is already scheduled (run it before the overlap "
                        "passes)";
    return WalkResult::interrupt();
  });
  if (scheduled.wasInterrupted())
    return signalPassFailure();
  Context context;
  context.automatic = mode == "auto";
  context.report = report;
  if (context.automatic) {
    FailureOr<cost::Cluster> loaded = loadClusterFor(func, cluster);
    if (failed(loaded))
      return signalPassFailure();
    context.cluster = *loaded;
  }
  RewritePatternSet patterns(&getContext());
  patterns.add<AllGatherRing, ReduceScatterRing>(&getContext(), context);
  patterns.add<GatherBeforeReshape, ScatterBeforeReshape>(&getContext());
  // The sites as written, no folding: the rewrite changes nothing else.
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
      .enableFolding(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
    func.emitWarning() << "braid-collective-matmul: the rewrite did not "
                          "converge";
  numAllGathers += context.allGathers;
  numReduceScatters += context.reduceScatters;
  numKept += context.kept;
}
