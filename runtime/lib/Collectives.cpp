//===- Collectives.cpp - collective instructions on a Communicator --------===//

#include "braid-runtime/Communicator.h"
#include "braid-runtime/Executor.h"

#include <algorithm>
#include <mutex>
#include <set>

using namespace braid;
using namespace braid::rt;

namespace {

/// A tensor split into `parts` along one dimension, seen as `rows` rows (the
/// product of the dimensions before it) of `parts` pieces of `piece` bytes.
struct Pieces {
  uint64_t rows = 1, piece = 0, parts = 1;

  Pieces(const Buffer &whole, int64_t dim, int64_t parts) : parts(parts) {
    for (int64_t d = 0; d < dim; ++d)
      rows *= whole.shape[d];
    piece = rows ? whole.bytes / rows / parts : 0;
  }
  /// Whether the pieces are contiguous already (rank order is memory order).
  bool contiguous() const { return rows <= 1; }
  /// Copies piece `p` of every row of `whole` to the contiguous block `p` of
  /// `blocks`, or back.
  void pack(CollectiveMemory &m, uint8_t *blocks, const uint8_t *whole) const {
    for (uint64_t p = 0; p < parts; ++p)
      m.copyRows(blocks + p * rows * piece, piece, whole + p * piece,
                 parts * piece, piece, rows);
  }
  void unpack(CollectiveMemory &m, uint8_t *whole,
              const uint8_t *blocks) const {
    for (uint64_t p = 0; p < parts; ++p)
      m.copyRows(whole + p * piece, parts * piece, blocks + p * rows * piece,
                 piece, piece, rows);
  }
};

} // namespace

void braid::rt::issueCollective(const Plan &plan, const Instr &instr,
                                uint8_t *arena, Communicator &comm,
                                CollectiveMemory &memory) {
  auto copy = [&](uint8_t *dst, const uint8_t *src, uint64_t bytes) {
    memory.copy(dst, src, bytes);
  };
  auto buffer = [&](uint32_t id) -> const Buffer & { return plan.buffers[id]; };
  auto at = [&](const Buffer &b) { return arena + b.offset; };
  auto in = [&]() -> const Buffer & { return buffer(instr.operands[0]); };
  auto out = [&]() -> const Buffer & { return buffer(instr.results[0]); };
  switch (instr.collective()) {
  case CollectiveKind::AllReduce: {
    const auto &attrs = instr.as<ops::AllReduceAttrs>();
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      const Buffer &x = buffer(instr.operands[i]),
                   &y = buffer(instr.results[i]);
      if (x.offset != y.offset)
        copy(at(y), at(x), y.bytes);
    }
    // One call per run of adjacent results of one type: a bucket is one.
    comm.groupStart();
    size_t i = 0;
    while (i < instr.results.size()) {
      const Buffer &first = buffer(instr.results[i]);
      uint64_t end = first.offset + first.bytes;
      int64_t elements = first.numElements();
      size_t j = i + 1;
      while (j < instr.results.size() &&
             buffer(instr.results[j]).offset == end &&
             buffer(instr.results[j]).dtype == first.dtype &&
             elements + buffer(instr.results[j]).numElements() < (1ll << 31)) {
        end += buffer(instr.results[j]).bytes;
        elements += buffer(instr.results[j]).numElements();
        ++j;
      }
      if (elements > 0)
        comm.allReduce(at(first), elements, first.dtype, attrs.reduction);
      i = j;
    }
    comm.groupEnd();
    return;
  }
  case CollectiveKind::ReduceScatter: {
    const auto &attrs = instr.as<ops::ReduceScatterAttrs>();
    Pieces pieces(in(), attrs.scatter_dim, comm.size());
    const uint8_t *input = at(in());
    if (!pieces.contiguous()) {
      uint8_t *blocks = memory.staging(in().bytes);
      pieces.pack(memory, blocks, input);
      input = blocks;
    }
    return comm.reduceScatter(input, at(out()), out().numElements(),
                              out().dtype, attrs.reduction);
  }
  case CollectiveKind::AllGather: {
    Pieces pieces(out(), instr.as<ops::AllGatherAttrs>().gather_dim,
                  comm.size());
    if (pieces.contiguous())
      return comm.allGather(at(in()), at(out()), in().numElements(),
                            in().dtype);
    uint8_t *blocks = memory.staging(out().bytes);
    comm.allGather(at(in()), blocks, in().numElements(), in().dtype);
    uint8_t *output = at(out());
    memory.afterwards([&memory, pieces, output, blocks] {
      pieces.unpack(memory, output, blocks);
    });
    return;
  }
  case CollectiveKind::AllToAll: {
    // split_dim == concat_dim (OpChecks): block j of the pieces goes to
    // rank j, and block i received takes the place of piece i.
    Pieces pieces(in(), instr.as<ops::AllToAllAttrs>().split_dim, comm.size());
    int64_t chunk = in().numElements() / comm.size();
    if (pieces.contiguous())
      return comm.allToAll(at(in()), at(out()), chunk, in().dtype);
    uint8_t *sent = memory.staging(in().bytes);
    uint8_t *received = memory.staging(out().bytes);
    pieces.pack(memory, sent, at(in()));
    comm.allToAll(sent, received, chunk, in().dtype);
    uint8_t *output = at(out());
    memory.afterwards([&memory, pieces, output, received] {
      pieces.unpack(memory, output, received);
    });
    return;
  }
  case CollectiveKind::Broadcast:
    copy(at(out()), at(in()), out().bytes);
    return comm.broadcast(at(out()), out().numElements(), out().dtype,
                          int(instr.as<ops::CollectiveBroadcastAttrs>().root));
  case CollectiveKind::Send:
    return comm.send(at(in()), in().numElements(), in().dtype,
                     int(instr.as<ops::SendAttrs>().peer));
  case CollectiveKind::Recv:
    return comm.recv(at(out()), out().numElements(), out().dtype,
                     int(instr.as<ops::RecvAttrs>().peer));
  case CollectiveKind::SendRecv: {
    // Every receive and send posted at once (one NCCL group; nonblocking
    // MPI calls), each matching the peer's transfer of its direction.
    const auto &a = instr.as<ops::SendRecvAttrs>();
    comm.groupStart();
    for (uint32_t id : instr.results)
      comm.recv(at(buffer(id)), buffer(id).numElements(), buffer(id).dtype,
                int(a.recv_peer));
    for (uint32_t id : instr.operands)
      comm.send(at(buffer(id)), buffer(id).numElements(), buffer(id).dtype,
                int(a.send_peer));
    comm.groupEnd();
    return;
  }
  case CollectiveKind::Permute: {
    // To the rank `offset` ahead, from the one behind, cyclically.
    int64_t n = comm.size(), index = comm.rank();
    int64_t offset = instr.as<ops::CollectivePermuteAttrs>().offset % n;
    return comm.sendRecv(at(in()), at(out()), in().numElements(), in().dtype,
                         int((index + offset + n) % n),
                         int((index - offset + n) % n));
  }
  case CollectiveKind::AxisIndex: {
    int64_t index = comm.rank();
    return memory.upload(at(out()), &index, sizeof(index));
  }
  case CollectiveKind::None:
    break;
  }
  throw CommError(instr.describe() + ": is not a collective");
}

void braid::rt::forEachCommunicator(
    const Plan &plan,
    const std::function<void(const CommunicatorSpec &, unsigned,
                             const std::vector<int> &, unsigned)> &fn) {
  std::vector<CommunicatorSpec> made;
  const std::vector<CommunicatorSpec> &all =
      plan.communicators.empty() ? (made = communicatorsOf(plan))
                                 : plan.communicators;
  // The (group, stream) pairs this program issues collectives on.
  std::set<std::pair<int, unsigned>> used;
  for (unsigned s = 0; s < plan.streams.size(); ++s)
    for (const Instr &instr : plan.streams[s].instrs)
      if (instr.info && instr.info->isCollective())
        used.insert({instr.group, s});
  // A program whose communicator the list lacks was not taken out of its
  // whole plan by programOf (checked before any rank waits on another).
  for (const auto &[group, stream] : used) {
    const Group &g = plan.groups[size_t(group)];
    const Stream &s = plan.streams[stream];
    if (std::none_of(all.begin(), all.end(), [&](const CommunicatorSpec &c) {
          return c.matches(g, s);
        }))
      throw CommError("device group #" + std::to_string(group) + " on stream " +
                      s.name() + " is not among the plan's communicators");
  }
  for (unsigned id = 0; id < all.size(); ++id) {
    const CommunicatorSpec &spec = all[id];
    std::vector<int> groups;
    unsigned local = 0;
    for (auto [group, stream] : used)
      if (spec.matches(plan.groups[size_t(group)], plan.streams[stream])) {
        groups.push_back(group);
        local = stream;
      }
    setPhase("connecting the ranks: communicator " + std::to_string(id + 1) +
             " of " + std::to_string(all.size()) + " (" + spec.describe() +
             ")");
    fn(spec, id, groups, local);
  }
}

namespace {
std::mutex phaseMutex;
std::string phaseText;
} // namespace

void braid::rt::setPhase(const std::string &phase) {
  std::lock_guard<std::mutex> lock(phaseMutex);
  phaseText = phase;
}

std::string braid::rt::currentPhase() {
  std::lock_guard<std::mutex> lock(phaseMutex);
  return phaseText;
}
