//===- CollectiveKind.h - the kinds of collective and their bytes -*- C++
//-*-===//
//
// One collective kind and one rule for the bytes a collective moves, shared
// by the dialect (CollectiveOpInterface), the bucket cost of the passes and
// the simulator. Each collective op of BraidOps.td names its kind
// (`collectiveKind`); the generated op table carries it into the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_COLLECTIVEKIND_H
#define BRAID_COMMON_COLLECTIVEKIND_H

#include <cstdint>

namespace braid {

enum class CollectiveKind : uint8_t {
  /// Not a collective (in the op table).
  None = 0,
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Broadcast,
  Send,
  Recv,
  /// A send to one peer and a receive from one, issued together
  /// (braid.send_recv).
  SendRecv,
  /// Every rank sends to the rank `offset` ahead and receives from the one
  /// behind (braid.collective_permute).
  Permute,
  /// No communication: the rank's index in the group (braid.axis_index).
  AxisIndex
};

/// The case labels of every kind that is not point-to-point (a group's
/// collectives, the rank index, none), for the switches that handle Send,
/// Recv and SendRecv apart and the rest alike: a new kind must be added
/// here or to those switches, which have no default.
#define BRAID_CASE_NOT_POINT_TO_POINT_KINDS                                    \
  case ::braid::CollectiveKind::AllReduce:                                     \
  case ::braid::CollectiveKind::ReduceScatter:                                 \
  case ::braid::CollectiveKind::AllGather:                                     \
  case ::braid::CollectiveKind::AllToAll:                                      \
  case ::braid::CollectiveKind::Broadcast:                                     \
  case ::braid::CollectiveKind::Permute:                                       \
  case ::braid::CollectiveKind::AxisIndex:                                     \
  case ::braid::CollectiveKind::None:

inline const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::None:
    return "none";
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Send:
    return "send";
  case CollectiveKind::Recv:
    return "recv";
  case CollectiveKind::SendRecv:
    return "send_recv";
  case CollectiveKind::Permute:
    return "permute";
  case CollectiveKind::AxisIndex:
    return "axis_index";
  }
  return "?";
}

/// The bytes a collective of `kind` moves for one rank, from the bytes of
/// its inputs and of its results: what the cost formulas take
/// (collectiveSeconds). An all-gather is timed by what it gathers, a
/// receive by what it receives, a send-receive by the larger of its halves
/// (they run at once, one in each direction of the links); every other
/// kind by its input.
inline uint64_t getCommBytes(CollectiveKind kind, uint64_t inputBytes,
                             uint64_t resultBytes) {
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::Recv:
    return resultBytes;
  case CollectiveKind::SendRecv:
    return inputBytes > resultBytes ? inputBytes : resultBytes;
  case CollectiveKind::AllReduce:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Broadcast:
  case CollectiveKind::Send:
  case CollectiveKind::Permute:
    return inputBytes;
  case CollectiveKind::None:
  case CollectiveKind::AxisIndex:
    return 0;
  }
  return 0;
}

} // namespace braid

#endif // BRAID_COMMON_COLLECTIVEKIND_H
