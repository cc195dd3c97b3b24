//===- BraidInterfaces.h - braid op interfaces ------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDINTERFACES_H
#define BRAID_DIALECT_BRAID_BRAIDINTERFACES_H

#include "braid-common/CollectiveKind.h"
#include "braid-common/CostModel.h"
#include "braid/Dialect/Braid/BraidAttributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

#include <type_traits>

namespace braid {

/// Bytes one element of `elementType` takes in memory (bf16: 2, i1: 1).
uint64_t getElementBytes(mlir::Type elementType);

/// Elements of a statically shaped tensor type; 0 for anything else.
uint64_t getNumElements(mlir::Type type);

/// Bytes of a statically shaped tensor type; 0 for anything else (futures,
/// events).
uint64_t getTensorBytes(mlir::Type type);

/// Sum of getTensorBytes over `types`.
uint64_t sumTensorBytes(mlir::TypeRange types);

/// What an op's localizeForSharding may build with: the tensor-parallel
/// axis and the collectives over it (braid-tensor-parallel implements it).
class LocalizeContext {
public:
  virtual ~LocalizeContext() = default;
  /// The number of ranks on the axis.
  virtual int64_t getSize() const = 0;
  /// This rank's index on the axis (a tensor<i64>, made once per function).
  virtual mlir::Value getAxisIndex() = 0;
  /// Gathers `value` along `dim` over the axis, at the builder's point.
  virtual mlir::Value allGather(mlir::OpBuilder &builder, mlir::Value value,
                                int64_t dim) = 0;
};

namespace detail {
/// Bytes the collective `op` of `kind` moves for one rank, by the cost
/// model's rule (braid::getCommBytes) over its tensor operands and the
/// tensors it yields (a start form: its future's).
uint64_t getCollectiveCommBytes(mlir::Operation *op, CollectiveKind kind);
/// The start form `startName` of the synchronous collective `op`, built at
/// `builder`'s insertion point with `op`'s operands and attributes.
mlir::Operation *buildStartForm(mlir::Operation *op, mlir::OpBuilder &builder,
                                llvm::StringRef startName);
/// The tensor-parallel rule of every collective (over grid axes other than
/// the tensor-parallel one): an all-reduce keeps each input's sharding (a
/// sum or average of pieces is the piece of the sum; max and min keep split
/// and replicated inputs only); the others move replicated values only.
llvm::LogicalResult
propagateCollectiveSharding(mlir::Operation *op,
                            llvm::ArrayRef<ShardingAttr> operands,
                            llvm::SmallVectorImpl<ShardingAttr> &results);
/// The collectives' reshardResult: an all-reduce's result can be split as
/// its input is asked to be.
llvm::LogicalResult
reshardCollectiveResult(mlir::Operation *op, unsigned result,
                        ShardingAttr wanted,
                        llvm::ArrayRef<ShardingAttr> operands,
                        llvm::SmallVectorImpl<ShardingAttr> &newOperands);
} // namespace detail

//===----------------------------------------------------------------------===//
// Sharding-rule traits
//===----------------------------------------------------------------------===//

// An op with one of these traits (Braid_Shard* in BraidOps.td) takes its
// tensor-parallel rule from the trait: ShardingOpInterface's default
// propagateSharding dispatches on it, and the op has no body of its own in
// ShardingRules.cpp. An op without one declares its own rule.

/// Equal operand shardings pass through; no partial operand (the op is not
/// linear): relu, the unary math functions, pow, where, cast.
template <typename ConcreteType>
class ShardElementwise
    : public mlir::OpTrait::TraitBase<ConcreteType, ShardElementwise> {};

/// Elementwise, and a sum of partial sums is one: every operand partial
/// gives a partial result (add, sub).
template <typename ConcreteType>
class ShardSum : public mlir::OpTrait::TraitBase<ConcreteType, ShardSum> {};

/// The base of ShardLinearIn's traits, to detect any of them.
struct ShardLinearInBase {};

/// Elementwise and linear in each of operands `Operands`: exactly one of
/// them partial, the others replicated, gives a partial result (mul in
/// either factor, div in its dividend, scale in its input).
template <unsigned... Operands> struct ShardLinearIn {
  template <typename ConcreteType>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteType, Impl>,
               public ShardLinearInBase {
  public:
    static llvm::ArrayRef<unsigned> getLinearOperands() {
      static constexpr unsigned operands[] = {Operands...};
      return operands;
    }
  };
};

/// Replicated operands (or none) give replicated results; nothing else has
/// a rule yet (the losses over whole rows, a dropout mask drawn for the
/// whole tensor, constants).
template <typename ConcreteType>
class ShardReplicated
    : public mlir::OpTrait::TraitBase<ConcreteType, ShardReplicated> {};

/// An optimizer update: the parameter's gradient and state spread as the
/// parameter is (not partial), scalar operands replicated.
template <typename ConcreteType>
class ShardUpdate : public mlir::OpTrait::TraitBase<ConcreteType, ShardUpdate> {
};

namespace detail {
/// The rules the sharding-rule traits name (ShardingRules.cpp).
enum class ShardingRule { Elementwise, Sum, LinearIn, Replicated, Update };
llvm::LogicalResult
propagateShardingByRule(mlir::Operation *op, ShardingRule rule,
                        llvm::ArrayRef<unsigned> linearOperands,
                        llvm::ArrayRef<ShardingAttr> operands,
                        llvm::SmallVectorImpl<ShardingAttr> &results);

template <typename> inline constexpr bool kNoShardingRule = false;

/// ShardingOpInterface's default propagateSharding: the rule of the op's
/// sharding-rule trait. An op with neither a trait nor its own
/// propagateSharding does not compile.
template <typename ConcreteOp>
llvm::LogicalResult
propagateShardingByTrait(ConcreteOp op, llvm::ArrayRef<ShardingAttr> operands,
                         llvm::SmallVectorImpl<ShardingAttr> &results) {
  ShardingRule rule;
  llvm::ArrayRef<unsigned> linear;
  if constexpr (ConcreteOp::template hasTrait<ShardElementwise>()) {
    rule = ShardingRule::Elementwise;
  } else if constexpr (ConcreteOp::template hasTrait<ShardSum>()) {
    rule = ShardingRule::Sum;
  } else if constexpr (std::is_base_of_v<ShardLinearInBase, ConcreteOp>) {
    rule = ShardingRule::LinearIn;
    linear = ConcreteOp::getLinearOperands();
  } else if constexpr (ConcreteOp::template hasTrait<ShardReplicated>()) {
    rule = ShardingRule::Replicated;
  } else if constexpr (ConcreteOp::template hasTrait<ShardUpdate>()) {
    rule = ShardingRule::Update;
  } else {
    static_assert(kNoShardingRule<ConcreteOp>,
                  "an op needs a sharding-rule trait (Braid_Shard* in "
                  "BraidOps.td) or its own propagateSharding");
  }
  return propagateShardingByRule(op.getOperation(), rule, linear, operands,
                                 results);
}
} // namespace detail

} // namespace braid

#include "braid/Dialect/Braid/BraidInterfaces.h.inc"

namespace braid {
/// The trait of ops that compute each token from that token alone
/// (Braid_PerToken in BraidOps.td).
template <typename ConcreteType>
class PerToken : public mlir::OpTrait::TraitBase<ConcreteType, PerToken> {};
/// The trait of ops whose result is their operand's bytes in another shape
/// (Braid_View in BraidOps.td).
template <typename ConcreteType>
class View : public mlir::OpTrait::TraitBase<ConcreteType, View> {};
} // namespace braid

#endif // BRAID_DIALECT_BRAID_BRAIDINTERFACES_H
