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
    auto type = cast<RankedTensorType>(mm.getType()).getElementType();
    DType dtype = type.isBF16()  ? DType::BF16
                  : type.isF16() ? DType::F16
                  : type.isF64() ? DType::F64
                                 : DType::F32;
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

/// An all-gather whose readers are all matmuls becomes a ring: rank `i`
/// multiplies the piece it holds while passing it on, and holds rank
/// `i - k`'s piece after `k` steps.
struct AllGatherRing : OpRewritePattern<AllGatherOp> {
  AllGatherRing(MLIRContext *ctx, Context &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(AllGatherOp gather,
                                PatternRewriter &rewriter) const override {
    int64_t t = groupSize(gather);
    int64_t dim = gather.getGatherDim();
    if (t < 2 || gather->use_empty())
      return failure();
    // A matmul, or a sum over the gathered dimension (a bias gradient over
    // the tokens): each reads the pieces as they come.
    struct Reader {
      Operation *op;
      MatmulOp mm; // Null for a sum.
      unsigned operand;
      Role role;
    };
    SmallVector<Reader> readers;
    for (Operation *user : gather->getUsers()) {
      if (llvm::any_of(readers, [&](const Reader &r) { return r.op == user; }))
        continue;
      if (auto sum = dyn_cast<ReduceSumOp>(user);
          sum && llvm::is_contained(sum.getDims(), dim)) {
        readers.push_back({sum, MatmulOp(), 0, Role::K});
        continue;
      }
      auto mm = dyn_cast<MatmulOp>(user);
      auto found =
          mm ? gatheredOperand(mm, gather.getResult(), dim) : std::nullopt;
      if (!found)
        return rewriter.notifyMatchFailure(
            gather, "a reader is neither a matmul nor a sum over the pieces");
      readers.push_back({mm, mm, found->first, found->second});
    }

    // In program order (a value's users are listed last first).
    if (llvm::all_of(readers, [&](const Reader &r) {
          return r.op->getBlock() == gather->getBlock();
        }))
      llvm::sort(readers, [](const Reader &a, const Reader &b) {
        return a.op->isBeforeInBlock(b.op);
      });

    Decision d;
    if (context.automatic) {
      double whole = 0, piece = 0, extra = 0;
      for (Reader &r : readers) {
        double alone = getOpSeconds(r.op, *context.cluster);
        uint64_t result = bytesOf(r.op->getResult(0).getType());
        whole += alone;
        piece += r.mm ? context.pieceSeconds(r.mm, r.role, t) : alone / t;
        // A join of the pieces' products, or t - 1 sums of them (and a
        // matmul's other operand cut into t slices).
        extra += r.role != Role::K
                     ? context.moveSeconds(result)
                     : double(t - 1) * context.moveSeconds(result);
        if (r.mm && r.role == Role::K)
          extra += context.moveSeconds(
              bytesOf(r.mm->getOperand(1 - r.operand).getType()));
      }
      d = context.decide(gather, whole, piece,
                         bytesOf(gather.getInput().getType()), extra, t);
    }
    context.note(gather, "all_gather", d);
    if (!d.decompose)
      return failure();

    Location loc = gather.getLoc();
    rewriter.setInsertionPoint(gather);
    Value index = AxisIndexOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI64Type()),
        gather.getGridAttr(), gather.getGridAxesAttr());
    // Piece k: what rank i - k started with, passed on while the readers
    // whose other operand is ready at the gather multiply it. A reader
    // further on (a weight gradient in the backward) multiplies the pieces
    // where it is: the ring has already run.
    DominanceInfo dominance;
    auto ready = [&](const Reader &r) {
      return !r.mm || dominance.properlyDominates(
                          r.mm->getOperand(1 - r.operand), gather);
    };
    SmallVector<Value> pieces{gather.getInput()};
    SmallVector<SmallVector<Value>> products(readers.size());
    auto step = [&](const Reader &r, int64_t k) -> Value {
      if (!r.mm)
        return ReduceSumOp::create(rewriter, loc, ValueRange{pieces[k]},
                                   r.op->getAttrs())
            .getResult();
      SmallVector<Value, 2> operands(r.mm->getOperands());
      operands[r.operand] = pieces[k];
      if (r.role == Role::K) {
        // The other operand's piece along the contracted dimension.
        unsigned other = 1 - r.operand;
        int64_t otherDim = operandDim(r.mm, other, Role::K, 0);
        operands[other] = ShardSliceOp::create(
            rewriter, loc, pieceType(operands[other].getType(), otherDim, t),
            operands[other], index, otherDim, t, -k);
      }
      return MatmulOp::create(rewriter, loc, operands, r.mm->getAttrs())
          .getResult();
    };
    for (int64_t k = 0; k < t; ++k) {
      if (k + 1 < t)
        pieces.push_back(CollectivePermuteOp::create(
            rewriter, loc, pieces[k].getType(), pieces[k], gather.getGridAttr(),
            gather.getGridAxesAttr(), ringOffset(rewriter)));
      for (auto [r, reader] : llvm::enumerate(readers))
        if (ready(reader))
          products[r].push_back(step(reader, k));
    }
    for (auto [r, reader] : llvm::enumerate(readers)) {
      rewriter.setInsertionPoint(reader.op);
      if (!ready(reader))
        for (int64_t k = 0; k < t; ++k)
          products[r].push_back(step(reader, k));
      Value result;
      if (reader.role == Role::K) {
        result = products[r].front();
        for (Value p : ArrayRef(products[r]).drop_front())
          result = AddOp::create(rewriter, loc, result, p);
      } else {
        SmallVector<int64_t> shifts;
        for (int64_t k = 0; k < t; ++k)
          shifts.push_back(-k);
        result = ShardConcatOp::create(
            rewriter, loc, products[r], index,
            resultDimOf(reader.mm, reader.operand, reader.role, dim), shifts);
      }
      rewriter.replaceOp(reader.op, result);
    }
    rewriter.eraseOp(gather);
    ++context.allGathers;
    return success();
  }

  Context &context;
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
    context.note(scatter, "reduce_scatter", d);
    if (!d.decompose)
      return failure();

    Location loc = scatter.getLoc();
    rewriter.setInsertionPoint(scatter);
    Value index = AxisIndexOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI64Type()),
        scatter.getGridAttr(), scatter.getGridAxesAttr());
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
  // The sites as written, no folding: the rewrite changes nothing else.
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps)
      .enableFolding(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
    func.emitWarning() << "braid-collective-matmul: the rewrite did not "
                          "converge";
  numAllGathers += context.allGathers;
  numReduceScatters += context.reduceScatters;
  numKept += context.kept;
}
