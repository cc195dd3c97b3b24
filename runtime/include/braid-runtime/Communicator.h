//===- Communicator.h - a device group's collectives, typed -----*- C++ -*-===//
//
// The boundary between the plan and a communication library: one typed
// method per collective (as c10d's Backend has), counts in elements of
// `dtype`. The cpu backend implements it over MPI (MpiCommunicator), the
// cuda backend over NCCL (NcclCommunicator). What a plan instruction means
// is decoded once, by issueCollective, for both; a backend only says how a
// collective is issued and when it has completed.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMMUNICATOR_H
#define BRAID_RUNTIME_COMMUNICATOR_H

#include "braid-runtime/Plan.h"

#include <cstdint>
#include <functional>

namespace braid::rt {

class Communicator {
public:
  virtual ~Communicator() = default;

  /// This rank's index in the group, and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Reduces `count` elements at `buffer` across the group, in place.
  virtual void allReduce(void *buffer, int64_t count, DType dtype,
                         ops::ReductionKind reduction) = 0;
  /// Reduces `input` (size() x `outputCount` elements); rank i keeps block i
  /// in `output`.
  virtual void reduceScatter(const void *input, void *output,
                             int64_t outputCount, DType dtype,
                             ops::ReductionKind reduction) = 0;
  /// Concatenates every rank's `inputCount` elements, by rank, in `output`.
  virtual void allGather(const void *input, void *output, int64_t inputCount,
                         DType dtype) = 0;
  /// Sends block j of `input` (`chunkCount` elements each) to rank j;
  /// block i of `output` comes from rank i.
  virtual void allToAll(const void *input, void *output, int64_t chunkCount,
                        DType dtype) = 0;
  /// Every rank's `buffer` becomes rank `root`'s.
  virtual void broadcast(void *buffer, int64_t count, DType dtype,
                         int root) = 0;
  virtual void send(const void *input, int64_t count, DType dtype,
                    int peer) = 0;
  virtual void recv(void *output, int64_t count, DType dtype, int peer) = 0;
  /// Sends `input` to rank `to` and receives `output` from rank `from`, at
  /// once (a collective permute).
  virtual void sendRecv(const void *input, void *output, int64_t count,
                        DType dtype, int to, int from) = 0;

  /// Calls between these two form one operation (NCCL's group calls: a
  /// bucket's runs, an all-to-all's sends and receives). No-ops by default.
  virtual void groupStart() {}
  virtual void groupEnd() {}
};

/// What issueCollective needs of a backend's memory besides the
/// communicator: copies within its arena (memcpy, cudaMemcpyAsync), and for
/// a split along an inner dimension, staging memory and work to do once the
/// communication has completed (unpacking a gather).
class CollectiveMemory {
public:
  virtual ~CollectiveMemory() = default;
  /// Copies `bytes` from `src` to `dst`.
  virtual void copy(uint8_t *dst, const uint8_t *src, uint64_t bytes) = 0;
  /// Copies `bytes` from host memory at `src` (which may be gone once this
  /// returns) to `dst`.
  virtual void upload(uint8_t *dst, const void *src, uint64_t bytes) = 0;
  /// Copies `rows` rows of `width` bytes, `srcPitch` bytes apart at `src`,
  /// to `dstPitch` bytes apart at `dst`.
  virtual void copyRows(uint8_t *dst, uint64_t dstPitch, const uint8_t *src,
                        uint64_t srcPitch, uint64_t width, uint64_t rows) = 0;
  /// `bytes` of staging memory, valid until the collective has completed.
  virtual uint8_t *staging(uint64_t bytes) = 0;
  /// Runs `fn` once the collective's communication has completed (in stream
  /// order on cuda: at once).
  virtual void afterwards(std::function<void()> fn) = 0;
};

/// Issues the collective `instr` on `comm`, over a backend's arena at
/// `arena`: the one decoding of a collective instruction. An all-reduce runs
/// in place over its results (inputs elsewhere are copied in first), one
/// call per run of adjacent results of one type, so a bucket is one call.
/// A reduce-scatter, all-gather or all-to-all along a dimension with
/// non-unit dimensions before it packs its pieces into staging memory
/// first (or unpacks them afterwards): the communication libraries move
/// contiguous blocks only.
void issueCollective(const Plan &plan, const Instr &instr, uint8_t *arena,
                     Communicator &comm, CollectiveMemory &memory);

/// Calls `fn(spec, id, groups, stream)` for each communicator of the whole plan
/// (`plan.communicators`, which programOf sets; communicatorsOf(plan) for a
/// plan made otherwise), in that order, on every rank: creating one is a
/// call on every rank of the world, so a rank creates those its own
/// program does not use too. `id` is the communicator's place in the list
/// (the same on every rank: the watchdog's name for it), `groups` the
/// program's device groups that issue collectives on it (empty where this
/// rank's program does not use it), and `stream` the place in
/// `plan.streams` of the spec's stream (0 where unused). Each call is
/// announced as the startup phase.
void forEachCommunicator(
    const Plan &plan,
    const std::function<void(const CommunicatorSpec &spec, unsigned id,
                             const std::vector<int> &groups, unsigned stream)>
        &fn);

/// What this process is doing while it starts or stops ("connecting the
/// ranks: communicator 2 of 3, ..."), for the message of a deadline that
/// passes: set by forEachCommunicator and by braid-run; thread-safe.
void setPhase(const std::string &phase);
std::string currentPhase();

} // namespace braid::rt

#endif // BRAID_RUNTIME_COMMUNICATOR_H
