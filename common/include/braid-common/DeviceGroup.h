//===- DeviceGroup.h - the ranks a collective's group holds -----*- C++ -*-===//
//
// A collective runs over the ranks of a grid (shard.grid, ranks numbered
// row-major) that differ only along its grid axes. The one enumeration of
// those groups, for the compiler's cost queries, the runtime's
// communicators and the simulator.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_DEVICEGROUP_H
#define BRAID_COMMON_DEVICEGROUP_H

#include <cstdint>
#include <vector>

namespace braid {

/// The most ranks a grid may have: the compiler's cost queries and the
/// runtime enumerate a group's members (2^24, far beyond any cluster).
inline constexpr int64_t kMaxRanks = int64_t(1) << 24;

/// Where world rank `rank` of a grid of `shape` sits among the groups that
/// `axes` span: `color` numbers its group (its coordinates off the axes,
/// row-major), `index` is its rank in the group (its coordinates along the
/// axes, in their order).
inline void locateInGroup(const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &axes, int64_t rank,
                          int64_t &color, int64_t &index) {
  std::vector<int64_t> coord(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = rank % shape[d];
    rank /= shape[d];
  }
  std::vector<bool> onAxis(shape.size(), false);
  index = 0;
  for (int64_t axis : axes) {
    onAxis[size_t(axis)] = true;
    index = index * shape[size_t(axis)] + coord[size_t(axis)];
  }
  color = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!onAxis[d])
      color = color * shape[d] + coord[d];
}

/// The world ranks of group `color`, in the order of their index.
inline std::vector<int64_t> groupMembers(const std::vector<int64_t> &shape,
                                         const std::vector<int64_t> &axes,
                                         int64_t color) {
  int64_t world = 1, size = 1;
  for (int64_t d : shape)
    world *= d;
  for (int64_t axis : axes)
    size *= shape[size_t(axis)];
  std::vector<int64_t> members(size_t(size), -1);
  for (int64_t r = 0; r < world; ++r) {
    int64_t c = 0, index = 0;
    locateInGroup(shape, axes, r, c, index);
    if (c == color)
      members[size_t(index)] = r;
  }
  return members;
}

} // namespace braid

#endif // BRAID_COMMON_DEVICEGROUP_H
