//===- RunData.h - a token file as braid-run's training data ----*- C++ -*-===//
//
// `--data FILE.bin`: a flat file of token ids (uint16, or uint32 with
// --token-bytes 4, as nanoGPT's prepare.py and llm.c write them), or a
// pattern (`train-*.bin`) of several such shards in name order, from
// which every step takes one window of seq + 1 tokens per row of the global
// batch: the row's token ids are its first seq tokens, its labels the last
// seq. Which window a row gets is a pure function of (seed, step, row), so
// a resumed run (--params with steps_done) continues the same stream, and
// python/braid/data.py computes the same windows for PyTorch.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNDATA_H
#define BRAID_RUNTIME_TOOLS_RUNDATA_H

#include "RunOptions.h"

#include "braid-runtime/Executor.h"
#include "braid-runtime/Plan.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace braid::rt {

/// The first token of row `row` (0-based, of the global batch's `rows`) at
/// step `step` (1-based, counting the steps of earlier runs), as a position
/// in the shards' tokens one after another (`shards` holds each one's
/// count, each at least `seq` + 1); a window of `seq` + 1 tokens never
/// crosses a shard's end:
/// - Sampling::Random: uniform over the starts whose window fits in its
///   shard, by Philox4x32-10 (braid-common/Philox.h) of the counter (row,
///   row >> 32, step, "data") under the key (seed, 0), its first two words
///   as a 64-bit number modulo the number of those starts (a shard of N
///   tokens has N - seq), counted shard after shard;
/// - Sampling::Sequential: the shards in order, each cut into
///   (N - 1) / seq windows of seq (a window's labels end on the next one's
///   first token), row r of step k taking window (k - 1) * rows + r of
///   them all, wrapping around.
/// python/braid/data.py computes the same.
uint64_t windowStart(Sampling sampling, const std::vector<uint64_t> &shards,
                     int64_t seq, int64_t rows, int64_t step, int64_t row,
                     uint64_t seed);

/// A token file and the batch inputs it fills on one rank: the token ids
/// (read by an embedding) and the labels (read by a loss), each [b, seq]
/// with b the replica's rows; data-parallel replica d takes rows
/// d * b .. (d + 1) * b - 1 of the global batch, and the tensor-parallel and
/// pipeline ranks of a replica take the same.
class TokenStream {
public:
  /// Opens --data and finds the inputs of `program` it fills; throws
  /// NpzError naming the file or the input and what is wrong.
  TokenStream(const Plan &program, const Options &o, int rank);
  /// The same for another token file: `path` as option `option` says it
  /// (--eval-data), drawn by `sampling`, logged to `logPrefix`.rankR.jsonl
  /// (none when empty).
  TokenStream(const Plan &program, const Options &o, int rank,
              const std::string &option, const std::string &path,
              Sampling sampling, const std::string &logPrefix);
  ~TokenStream();
  TokenStream(const TokenStream &) = delete;
  TokenStream &operator=(const TokenStream &) = delete;

  /// Writes step `step`'s windows (1-based, counting earlier runs' steps)
  /// into the inputs on `backend`, and a line to --data-log. Throws
  /// NpzError on a token id the plan's embedding or loss cannot take.
  void write(Backend &backend, int64_t step);

  /// The batch inputs this stream fills.
  const std::vector<uint32_t> &filled() const { return buffers; }

  /// The tokens a step trains on over every replica: its rows of seq.
  int64_t tokensPerStep() const { return globalRows * seq; }

private:
  /// One file of the token file's pattern, mapped.
  struct Shard {
    std::string path;
    const uint8_t *data = nullptr;
    size_t bytes = 0;
    /// Its tokens, and the position of its first in all the shards'.
    uint64_t tokens = 0, first = 0;
  };

  const Plan &plan;
  std::string option, path;
  Sampling sampling;
  uint64_t seed;
  int width;
  std::vector<Shard> shards;
  std::vector<uint64_t> shardTokens;

  /// The shard holding position `start`, whose window it holds whole.
  const Shard &shardAt(uint64_t start) const;
  std::vector<int64_t> read(uint64_t start, int64_t count) const;

  int64_t rows = 0, seq = 0, firstRow = 0, globalRows = 0;
  /// The inputs, each with the offset of its tokens in a window (0 for the
  /// ids, 1 for the labels) and the largest id it takes.
  std::vector<uint32_t> buffers;
  std::vector<int> shift;
  std::vector<int64_t> limit;
  std::FILE *log = nullptr;
};

/// The order of the samples in epoch `epoch` (0-based) of a dataset of
/// `count` samples: Sampling::Sequential, 0 .. count - 1; Sampling::Random,
/// the samples sorted by the 64-bit number that Philox4x32-10 of the
/// counter (i, i >> 32, epoch, "epoc") under the key (seed, 0) gives sample
/// i (its first two words), ties by i. python/braid/data.py computes the
/// same.
std::vector<int64_t> epochOrder(Sampling sampling, int64_t count, int64_t epoch,
                                uint64_t seed);

/// A .npz of N samples as --data with --sampling: every batch input is an
/// array [N, ...] of its per-row shape, and the data-parallel ranks take the
/// global batch of G rows (each replica's b rows, replica d rows
/// d b .. (d + 1) b - 1) from the samples in epochs, as PyTorch's
/// DataLoader does with drop_last: an epoch is N // G steps (the samples left
/// over are not used in that epoch), step k (1-based) is step
/// (k - 1) % (N // G) of epoch (k - 1) // (N // G), and global row j of a
/// step p of epoch e is sample epochOrder(e)[p G + j]. A pure function of
/// (seed, step), so a resumed run continues the same stream.
class SampleStream {
public:
  /// One batch input: its buffer and all N samples, converted to its type.
  struct Input {
    uint32_t buffer;
    std::vector<uint8_t> samples;
  };
  /// Throws NpzError naming the file when it holds fewer samples than a
  /// global batch.
  SampleStream(const Plan &program, const Options &o, int rank, int64_t count,
               std::vector<Input> inputs);
  ~SampleStream();
  SampleStream(const SampleStream &) = delete;
  SampleStream &operator=(const SampleStream &) = delete;
  /// Writes step `step`'s samples (1-based, counting earlier runs' steps),
  /// and a line to --data-log.
  void write(Backend &backend, int64_t step);

private:
  const Plan &plan;
  Sampling sampling;
  uint64_t seed;
  int64_t count, rows = 0, firstRow = 0, globalRows = 0;
  std::vector<Input> inputs;
  /// The order of the epoch last used.
  int64_t epoch = -1;
  std::vector<int64_t> order;
  std::FILE *log = nullptr;
};

/// Whether --data names a token file rather than a batch or samples (.npz,
/// or .npy for a plan of one batch input).
bool isTokenFile(const std::string &path);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNDATA_H
