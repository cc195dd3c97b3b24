//===- RunData.cpp - a token file as braid-run's training data ------------===//
//
// RunData.h.
//
//===----------------------------------------------------------------------===//

#include "RunData.h"

#include "RunInputs.h"

#include "braid-common/Philox.h"
#include "braid-runtime/Npz.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace braid;
using namespace braid::rt;

namespace {

/// The Philox counter's last word for the data's draws: "data".
constexpr uint32_t kDataStream = 0x64617461u;

} // namespace

bool braid::rt::isTokenFile(const std::string &path) {
  return path.size() < 4 || path.compare(path.size() - 4, 4, ".npz") != 0;
}

uint64_t braid::rt::windowStart(Sampling sampling, uint64_t tokens, int64_t seq,
                                int64_t rows, int64_t step, int64_t row,
                                uint64_t seed) {
  if (sampling == Sampling::Sequential) {
    uint64_t windows = (tokens - 1) / uint64_t(seq);
    uint64_t index = uint64_t(step - 1) * uint64_t(rows) + uint64_t(row);
    return index % windows * uint64_t(seq);
  }
  Philox4x32 counter = {{uint32_t(uint64_t(row)), uint32_t(uint64_t(row) >> 32),
                         uint32_t(step), kDataStream}};
  Philox4x32 r = philox4x32_10(counter, uint32_t(seed), 0);
  uint64_t bits = uint64_t(r.v[0]) | uint64_t(r.v[1]) << 32;
  return bits % (tokens - uint64_t(seq));
}

TokenStream::TokenStream(const Plan &program, const Options &o, int rank)
    : plan(program), path(o.data), sampling(o.sampling), seed(o.seed),
      width(o.tokenBytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw NpzError("cannot open the token file " + path + ": " +
                   std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw NpzError(path + " is not a regular file");
  }
  bytes = size_t(st.st_size);
  if (bytes % size_t(width)) {
    ::close(fd);
    throw NpzError(path + " has " + std::to_string(bytes) +
                   " bytes, not a whole number of " +
                   std::to_string(8 * width) + "-bit tokens (--token-bytes " +
                   std::to_string(width) + ")");
  }
  tokens = bytes / size_t(width);
  if (bytes) {
    void *m = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      throw NpzError("cannot map " + path + ": " + std::strerror(errno));
    }
    data = static_cast<const uint8_t *>(m);
  }
  ::close(fd);

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
          "--data " + path +
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
      throw NpzError("--data " + path + ": the batch input '" + b.name +
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
  if (tokens < uint64_t(seq) + 1)
    throw NpzError(path + " holds " + std::to_string(tokens) +
                   " tokens, fewer than a window of " +
                   std::to_string(seq + 1) + " (the sequence of " +
                   std::to_string(seq) + " and the next token of its last)");
  RankPlace place = placeRank(plan, rank);
  firstRow = int64_t(place.dpIndex) * rows;
  globalRows = int64_t(place.dpSize) * rows;
  if (!o.dataLog.empty()) {
    std::string name = o.dataLog + ".rank" + std::to_string(rank) + ".jsonl";
    log = std::fopen(name.c_str(), "w");
    if (!log)
      throw NpzError("cannot write --data-log " + name + ": " +
                     std::strerror(errno));
  }
}

TokenStream::~TokenStream() {
  if (data)
    ::munmap(const_cast<uint8_t *>(data), bytes);
  if (log)
    std::fclose(log);
}

std::vector<int64_t> TokenStream::read(uint64_t start, int64_t count) const {
  std::vector<int64_t> out(static_cast<size_t>(count));
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
    starts[size_t(r)] = windowStart(sampling, tokens, seq, globalRows, step,
                                    firstRow + r, seed);
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer &buffer = plan.buffers[buffers[k]];
    std::vector<uint8_t> out(buffer.bytes);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> ids =
          read(starts[size_t(r)] + uint64_t(shift[k]), seq);
      for (int64_t t = 0; t < seq; ++t) {
        int64_t v = ids[size_t(t)];
        if (v >= limit[k])
          throw NpzError(
              path + " holds token " + std::to_string(v) + " at position " +
              std::to_string(starts[size_t(r)] + uint64_t(shift[k] + t)) +
              ", but the plan takes ids below " + std::to_string(limit[k]) +
              " (the vocabulary of its " + (shift[k] ? "loss" : "embedding") +
              ")");
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
