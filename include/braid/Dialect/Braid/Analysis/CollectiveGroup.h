//===- CollectiveGroup.h - the device group of a collective -----*- C++ -*-===//
//
// A collective runs over the ranks that the grid axes of a shard.grid span.
// CollectiveGroup is that group as a value: the grid's name and the axes,
// both uniqued attributes, so that it compares and hashes by pointer. The
// passes key per-group state by it (the issue order of a group, its stream),
// the translator its plan groups; it prints as `@world[0, 1]` in messages.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_COLLECTIVEGROUP_H
#define BRAID_DIALECT_BRAID_ANALYSIS_COLLECTIVEGROUP_H

#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMapInfo.h"

namespace braid {

struct CollectiveGroup {
  mlir::StringAttr grid;
  /// A DenseI16ArrayAttr (held as an Attribute, which hashes).
  mlir::Attribute axes;

  llvm::ArrayRef<int16_t> getAxes() const {
    return llvm::cast<mlir::DenseI16ArrayAttr>(axes).asArrayRef();
  }

  static CollectiveGroup of(CollectiveOpInterface op);

  bool operator==(const CollectiveGroup &other) const {
    return grid == other.grid && axes == other.axes;
  }
  bool operator!=(const CollectiveGroup &other) const {
    return !(*this == other);
  }
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                              const CollectiveGroup &group);
mlir::Diagnostic &operator<<(mlir::Diagnostic &diag,
                             const CollectiveGroup &group);

} // namespace braid

namespace llvm {
template <> struct DenseMapInfo<braid::CollectiveGroup> {
  using Pair = std::pair<mlir::StringAttr, mlir::Attribute>;
  static braid::CollectiveGroup getEmptyKey() {
    Pair p = DenseMapInfo<Pair>::getEmptyKey();
    return {p.first, p.second};
  }
  static braid::CollectiveGroup getTombstoneKey() {
    Pair p = DenseMapInfo<Pair>::getTombstoneKey();
    return {p.first, p.second};
  }
  static unsigned getHashValue(const braid::CollectiveGroup &g) {
    return DenseMapInfo<Pair>::getHashValue({g.grid, g.axes});
  }
  static bool isEqual(const braid::CollectiveGroup &a,
                      const braid::CollectiveGroup &b) {
    return a == b;
  }
};
} // namespace llvm

#endif // BRAID_DIALECT_BRAID_ANALYSIS_COLLECTIVEGROUP_H
