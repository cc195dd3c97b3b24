//===- Sharding.cpp - a rank's piece of a tensor-parallel value -----------===//
//
// Where a rank sits on the tensor-parallel axis, and the copies between a
// global value and the piece of it a rank's buffer holds (braid-run loads
// global parameters and saves them gathered; docs/TensorParallel.md).
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/Plan.h"

#include "braid-common/DeviceGroup.h"

#include <algorithm>
#include <cstring>

using namespace braid;
using namespace braid::rt;

RankPlace rt::placeRank(const Plan &plan, int64_t rank) {
  RankPlace place;
  place.tpSize = plan.tpSize();
  place.ppSize = plan.ppSize();
  place.dpSize = int64_t(plan.worldSize) / (place.tpSize * place.ppSize);
  place.dpIndex = rank;
  int64_t color = 0;
  if (plan.tpAxis >= 0)
    locateInGroup(plan.tpGrid, {plan.tpAxis}, rank, color, place.tpIndex);
  if (plan.ppAxis >= 0)
    locateInGroup(plan.ppGrid, {plan.ppAxis}, rank, color, place.ppIndex);
  // The replica: the coordinates off both axes (the loader checks that
  // the two are axes of one grid shape).
  std::vector<int64_t> axes;
  for (int32_t axis : {plan.tpAxis, plan.ppAxis})
    if (axis >= 0)
      axes.push_back(axis);
  std::sort(axes.begin(), axes.end());
  if (!axes.empty())
    locateInGroup(plan.tpAxis >= 0 ? plan.tpGrid : plan.ppGrid, axes, rank,
                  place.dpIndex, color);
  if (plan.dpAxis >= 0) {
    place.shards = plan.dpShards();
    locateInGroup(plan.dpGrid, {plan.dpAxis}, rank, color, place.shardIndex);
  }
  return place;
}

std::vector<int64_t> rt::tensorParallelShape(const Plan &plan,
                                             const Binding &binding) {
  std::vector<int64_t> shape = plan.buffers[binding.buffer].shape;
  if (binding.dpSplitDim >= 0)
    shape[size_t(binding.dpSplitDim)] *= plan.dpShards();
  return shape;
}

std::vector<int64_t> rt::globalShape(const Plan &plan, const Binding &binding) {
  std::vector<int64_t> shape = tensorParallelShape(plan, binding);
  if (binding.splitDim >= 0)
    shape[size_t(binding.splitDim)] *= plan.tpSize();
  return shape;
}

void rt::copyPiece(const uint8_t *from, uint8_t *to,
                   const std::vector<int64_t> &shape, size_t elementBytes,
                   int32_t dim, const std::vector<int64_t> &blocks,
                   int64_t size, int64_t index, bool toPiece) {
  // Rows of `outer` blocks of the split dimension, each element `inner`
  // bytes wide: the global row holds every block whole, the piece's row
  // holds 1/size of each, in block order.
  size_t d = size_t(dim), outer = 1, inner = elementBytes;
  for (size_t k = 0; k < d; ++k)
    outer *= size_t(shape[k]);
  for (size_t k = d + 1; k < shape.size(); ++k)
    inner *= size_t(shape[k]);
  std::vector<int64_t> sizes =
      blocks.empty() ? std::vector<int64_t>{shape[d]} : blocks;
  size_t globalRow = size_t(shape[d]) * inner;
  size_t pieceRow = globalRow / size_t(size);
  for (size_t o = 0; o < outer; ++o) {
    size_t globalAt = o * globalRow, pieceAt = o * pieceRow;
    for (int64_t block : sizes) {
      size_t part = size_t(block / size) * inner;
      size_t g = globalAt + size_t(index) * part;
      if (toPiece)
        std::memcpy(to + pieceAt, from + g, part);
      else
        std::memcpy(to + g, from + pieceAt, part);
      globalAt += size_t(block) * inner;
      pieceAt += part;
    }
  }
}
