//===- BraidInterfaces.h - braid op interfaces ------------------*- C++ -*-===//

#ifndef BRAID_DIALECT_BRAID_BRAIDINTERFACES_H
#define BRAID_DIALECT_BRAID_BRAIDINTERFACES_H

#include "braid-common/CollectiveKind.h"
#include "braid-common/CostModel.h"
#include "braid/Dialect/Braid/BraidAttributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

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
