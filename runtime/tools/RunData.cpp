//===- RunData.cpp - a token file as braid-run's training data ------------===//
//
// RunData.h.
//
//===----------------------------------------------------------------------===//

#include "RunData.h"

#include "RunInputs.h"

#include "braid-common/Philox.h"
#include "braid-runtime/Npz.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace braid;
using namespace braid::rt;

namespace {

/// The Philox counter's last word for the data's draws: "data".
constexpr uint32_t kDataStream = 0x64617461u;
/// The Philox counter's last word for an epoch's order: "epoc".
constexpr uint32_t kEpochStream = 0x65706f63u;

} // namespace

bool braid::rt::isTokenFile(const std::string &path) {
  auto endsWith = [&](const char *suffix) {
    return path.size() >= 4 && path.compare(path.size() - 4, 4, suffix) == 0;
  };
  return !endsWith(".npz") && !endsWith(".npy");
}

uint64_t braid::rt::windowStart(Sampling sampling,
                                const std::vector<uint64_t> &shards,
                                int64_t seq, int64_t rows, int64_t step,
                                int64_t row, uint64_t seed) {
  uint64_t n = uint64_t(seq);
  // The windows (sequential) or starts (random) each shard has.
  auto count = [&](uint64_t tokens) {
    return sampling == Sampling::Sequential ? (tokens - 1) / n : tokens - n;
  };
  uint64_t total = 0;
  for (uint64_t tokens : shards)
    total += count(tokens);
  uint64_t index;
  if (sampling == Sampling::Sequential) {
    index = (uint64_t(step - 1) * uint64_t(rows) + uint64_t(row)) % total;
  } else {
    Philox4x32 counter = {{uint32_t(uint64_t(row)),
                           uint32_t(uint64_t(row) >> 32), uint32_t(step),
                           kDataStream}};
    Philox4x32 r = philox4x32_10(counter, uint32_t(seed), 0);
    index = (uint64_t(r.v[0]) | uint64_t(r.v[1]) << 32) % total;
  }
  uint64_t first = 0;
  for (uint64_t tokens : shards) {
    if (index < count(tokens))
      return first + (sampling == Sampling::Sequential ? index * n : index);
    index -= count(tokens);
    first += tokens;
  }
  return first; // not reached: index < total
}

namespace {

/// The files `pattern` names: itself, or where it has a wildcard (*, ?,
/// [), the files it matches in name order.
std::vector<std::string> shardPaths(const std::string &pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos)
    return {pattern};
  glob_t found;
  int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &found);
  std::vector<std::string> paths;
  if (status == 0)
    paths.assign(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  ::globfree(&found);
  if (status == GLOB_NOMATCH || (status == 0 && paths.empty()))
    throw NpzError("--data " + pattern + " matches no file");
  if (status != 0)
    throw NpzError("--data " + pattern + ": cannot list its folder");
  std::sort(paths.begin(), paths.end());
  return paths;
}

} // namespace

TokenStream::TokenStream(const Plan &program, const Options &o, int rank)
    : TokenStream(program, o, rank, "--data", o.data, o.sampling, o.dataLog) {}

TokenStream::TokenStream(const Plan &program, const Options &o, int rank,
                         const std::string &option, const std::string &path,
                         Sampling sampling, const std::string &logPrefix)
    : plan(program), option(option), path(path), sampling(sampling),
      seed(o.seed), width(o.tokenBytes) {
  uint64_t first = 0;
  for (const std::string &file : shardPaths(path)) {
    Shard shard;
    shard.path = file;
    int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0)
      throw NpzError("cannot open the token file " + file + ": " +
                     std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw NpzError(file + " is not a regular file");
    }
    shard.bytes = size_t(st.st_size);
    if (shard.bytes % size_t(width)) {
      ::close(fd);
      throw NpzError(file + " has " + std::to_string(shard.bytes) +
                     " bytes, not a whole number of " +
                     std::to_string(8 * width) + "-bit tokens (--token-bytes " +
                     std::to_string(width) + ")");
    }
    shard.tokens = shard.bytes / size_t(width);
    if (shard.bytes) {
      void *m = ::mmap(nullptr, shard.bytes, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        ::close(fd);
        throw NpzError("cannot map " + file + ": " + std::strerror(errno));
      }
      shard.data = static_cast<const uint8_t *>(m);
    }
    ::close(fd);
    shard.first = first;
    first += shard.tokens;
    shardTokens.push_back(shard.tokens);
    shards.push_back(std::move(shard));
  }

  // The inputs the windows fill: the token ids an embedding reads and the
  // labels a loss reads, each [b, seq] of an integer type.
  for (const Binding &b : plan.arguments) {
    if (b.role != Role::Batch && b.role != Role::Temporary)
      continue;
    const Buffer &buffer = plan.buffers[b.buffer];
    IndexUse use = indexUse(plan, b.buffer);
    bool integer = buffer.dtype == DType::I32 || buffer.dtype == DType::I64;
    if (!integer || use.embedding == use.loss)
      throw NpzError(
          option + " " + path +
          " is a token file, which fills token ids (an "
          "embedding's) and labels (a loss's); the plan's batch input '" +
          b.name + "' (" + dtypeName(buffer.dtype) + ", shape " +
          shapeText(buffer.shape) + ") is " +
          (!integer        ? std::string("not integers")
           : use.embedding ? std::string("read as both")
                           : std::string("neither")) +
          " (pass a batch .npz for this model)");
    if (buffer.shape.size() != 2 ||
        (seq && (buffer.shape[0] != rows || buffer.shape[1] != seq)))
      throw NpzError(option + " " + path + ": the batch input '" + b.name +
                     "' has shape " + shapeText(buffer.shape) +
                     "; a token file fills [rows, seq] token ids and labels "
                     "of one shape");
    rows = buffer.shape[0];
    seq = buffer.shape[1];
    buffers.push_back(b.buffer);
    shift.push_back(use.loss ? 1 : 0);
    limit.push_back(use.limit);
  }
  if (buffers.empty())
    return; // a pipeline stage that reads no batch input
  for (const Shard &shard : shards)
    if (shard.tokens < uint64_t(seq) + 1)
      throw NpzError(shard.path + " holds " + std::to_string(shard.tokens) +
                     " tokens, fewer than a window of " +
                     std::to_string(seq + 1) + " (the sequence of " +
                     std::to_string(seq) + " and the next token of its last)");
  RankPlace place = placeRank(plan, rank);
  firstRow = int64_t(place.dpIndex) * rows;
  globalRows = int64_t(place.dpSize) * rows;
  if (!logPrefix.empty()) {
    std::string name = logPrefix + ".rank" + std::to_string(rank) + ".jsonl";
    log = std::fopen(name.c_str(), "w");
    if (!log)
      throw NpzError("cannot write --data-log " + name + ": " +
                     std::strerror(errno));
  }
}

TokenStream::~TokenStream() {
  for (const Shard &shard : shards)
    if (shard.data)
      ::munmap(const_cast<uint8_t *>(shard.data), shard.bytes);
  if (log)
    std::fclose(log);
}

const TokenStream::Shard &TokenStream::shardAt(uint64_t start) const {
  auto it = std::upper_bound(
      shards.begin(), shards.end(), start,
      [](uint64_t at, const Shard &shard) { return at < shard.first; });
  return *std::prev(it);
}

std::vector<int64_t> TokenStream::read(uint64_t start, int64_t count) const {
  std::vector<int64_t> out(static_cast<size_t>(count));
  const Shard &shard = shardAt(start);
  const uint8_t *data = shard.data;
  start -= shard.first;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t *p = data + (start + uint64_t(i)) * uint64_t(width);
    if (width == 2) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      out[size_t(i)] = v;
    } else {
      uint32_t v;
      std::memcpy(&v, p, 4);
      out[size_t(i)] = v;
    }
  }
  return out;
}

void TokenStream::write(Backend &backend, int64_t step) {
  std::vector<uint64_t> starts(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    starts[size_t(r)] = windowStart(sampling, shardTokens, seq, globalRows,
                                    step, firstRow + r, seed);
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer &buffer = plan.buffers[buffers[k]];
    std::vector<uint8_t> out(buffer.bytes);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> ids =
          read(starts[size_t(r)] + uint64_t(shift[k]), seq);
      for (int64_t t = 0; t < seq; ++t) {
        int64_t v = ids[size_t(t)];
        if (v >= limit[k])
          throw NpzError(shardAt(starts[size_t(r)]).path + " holds token " +
                         std::to_string(v) + " at position " +
                         std::to_string(starts[size_t(r)] -
                                        shardAt(starts[size_t(r)]).first +
                                        uint64_t(shift[k] + t)) +
                         ", but the plan takes ids below " +
                         std::to_string(limit[k]) + " (the vocabulary of its " +
                         (shift[k] ? "loss" : "embedding") + ")");
        size_t i = size_t(r * seq + t);
        if (buffer.dtype == DType::I64)
          reinterpret_cast<int64_t *>(out.data())[i] = v;
        else
          reinterpret_cast<int32_t *>(out.data())[i] = int32_t(v);
      }
    }
    backend.write(buffer, out.data());
  }
  if (log) {
    std::fprintf(log, "{\"step\": %lld, \"first_row\": %lld, \"starts\": [",
                 (long long)step, (long long)firstRow);
    for (int64_t r = 0; r < rows; ++r)
      std::fprintf(log, "%s%llu", r ? ", " : "",
                   (unsigned long long)starts[size_t(r)]);
    std::fputs("]}\n", log);
    std::fflush(log);
  }
}

std::vector<int64_t> braid::rt::epochOrder(Sampling sampling, int64_t count,
                                           int64_t epoch, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    order[size_t(i)] = i;
  if (sampling == Sampling::Sequential)
    return order;
  std::vector<uint64_t> key(order.size());
  for (int64_t i = 0; i < count; ++i) {
    Philox4x32 counter = {{uint32_t(uint64_t(i)), uint32_t(uint64_t(i) >> 32),
                           uint32_t(epoch), kEpochStream}};
    Philox4x32 r = philox4x32_10(counter, uint32_t(seed), 0);
    key[size_t(i)] = uint64_t(r.v[0]) | uint64_t(r.v[1]) << 32;
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return key[size_t(a)] != key[size_t(b)] ? key[size_t(a)] < key[size_t(b)]
                                            : a < b;
  });
  return order;
}

SampleStream::SampleStream(const Plan &program, const Options &o, int rank,
                           int64_t count, std::vector<Input> inputs)
    : plan(program), sampling(o.sampling), seed(o.seed), count(count),
      inputs(std::move(inputs)) {
  if (this->inputs.empty())
    return; // a pipeline stage that reads no batch input
  rows = plan.buffers[this->inputs.front().buffer].shape.at(0);
  RankPlace place = placeRank(plan, rank);
  firstRow = int64_t(place.dpIndex) * rows;
  globalRows = int64_t(place.dpSize) * rows;
  if (count < globalRows)
    throw NpzError("--data " + o.data + " holds " + std::to_string(count) +
                   " samples, fewer than a step's global batch of " +
                   std::to_string(globalRows) + " (" +
                   std::to_string(place.dpSize) + " data-parallel ranks x " +
                   std::to_string(rows) + " rows)");
  if (!o.dataLog.empty()) {
    std::string name = o.dataLog + ".rank" + std::to_string(rank) + ".jsonl";
    log = std::fopen(name.c_str(), "w");
    if (!log)
      throw NpzError("cannot write --data-log " + name + ": " +
                     std::strerror(errno));
  }
}

SampleStream::~SampleStream() {
  if (log)
    std::fclose(log);
}

void SampleStream::write(Backend &backend, int64_t step) {
  if (inputs.empty())
    return;
  int64_t perEpoch = count / globalRows;
  int64_t e = (step - 1) / perEpoch, p = (step - 1) % perEpoch;
  if (e != epoch) {
    order = epochOrder(sampling, count, e, seed);
    epoch = e;
  }
  std::vector<int64_t> taken(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    taken[size_t(r)] = order[size_t(p * globalRows + firstRow + r)];
  for (const Input &input : inputs) {
    const Buffer &buffer = plan.buffers[input.buffer];
    uint64_t rowBytes = buffer.bytes / uint64_t(rows);
    std::vector<uint8_t> out(buffer.bytes);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out.data() + uint64_t(r) * rowBytes,
                  input.samples.data() + uint64_t(taken[size_t(r)]) * rowBytes,
                  rowBytes);
    backend.write(buffer, out.data());
  }
  if (log) {
    std::fprintf(log,
                 "{\"step\": %lld, \"epoch\": %lld, \"first_row\": %lld, "
                 "\"samples\": [",
                 (long long)step, (long long)e, (long long)firstRow);
    for (int64_t r = 0; r < rows; ++r)
      std::fprintf(log, "%s%lld", r ? ", " : "", (long long)taken[size_t(r)]);
    std::fputs("]}\n", log);
    std::fflush(log);
  }
}
