//===- Collectives.cpp - collective instructions on a Communicator --------===//

#include "braid-runtime/Communicator.h"
#include "braid-runtime/Executor.h"

#include <set>

using namespace braid;
using namespace braid::rt;

void braid::rt::issueCollective(const Plan &plan, const Instr &instr,
                                uint8_t *arena, Communicator &comm,
                                const ArenaCopy &copy) {
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
  case CollectiveKind::ReduceScatter:
    return comm.reduceScatter(at(in()), at(out()), out().numElements(),
                              out().dtype,
                              instr.as<ops::ReduceScatterAttrs>().reduction);
  case CollectiveKind::AllGather:
    return comm.allGather(at(in()), at(out()), in().numElements(), in().dtype);
  case CollectiveKind::AllToAll:
    return comm.allToAll(at(in()), at(out()), in().numElements() / comm.size(),
                         in().dtype);
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
  case CollectiveKind::Permute: {
    // To the rank `offset` ahead, from the one behind, cyclically.
    int64_t n = comm.size(), index = comm.rank();
    int64_t offset = instr.as<ops::CollectivePermuteAttrs>().offset % n;
    return comm.sendRecv(at(in()), at(out()), in().numElements(), in().dtype,
                         int((index + offset + n) % n),
                         int((index - offset + n) % n));
  }
  case CollectiveKind::None:
    break;
  }
  throw CommError(instr.describe() + ": is not a collective");
}

void braid::rt::forEachCommunicator(
    const Plan &plan, const std::function<void(int, unsigned)> &fn) {
  std::set<std::pair<int, unsigned>> seen;
  for (unsigned s = 0; s < plan.streams.size(); ++s)
    for (const Instr &instr : plan.streams[s].instrs)
      if (instr.info && instr.info->isCollective() &&
          seen.insert({instr.group, s}).second)
        fn(instr.group, s);
}
