//===- RunSave.cpp - what braid-run writes for --save ---------------------===//
//
// RunSave.h.
//
//===----------------------------------------------------------------------===//

#include "RunSave.h"

#include "RunDeadline.h"

#include "braid-runtime/HalfFloat.h"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

using namespace braid;
using namespace braid::rt;

std::string braid::rt::savePathOf(const std::string &save, int rank) {
  const std::string field = "{rank}";
  std::string path = save;
  for (size_t at = path.find(field); at != std::string::npos;
       at = path.find(field, at))
    path.replace(at, field.size(), std::to_string(rank));
  return path;
}

void braid::rt::checkWritable(const std::string &save, int rank) {
  if (save.empty() || (rank != 0 && save.find("{rank}") == std::string::npos))
    return;
  std::string path = savePathOf(save, rank);
  bool existed = std::ifstream(path).good();
  std::ofstream probe(path, std::ios::app | std::ios::binary);
  if (!probe)
    throw std::runtime_error("cannot write --save file '" + path +
                             "': " + std::strerror(errno));
  probe.close();
  if (!existed)
    std::remove(path.c_str());
}

void braid::rt::widenSaved(NpyArray &array, DType dtype) {
  if (!isHalf(dtype))
    return;
  size_t n = array.data.size() / dtypeBytes(dtype);
  std::vector<uint8_t> wide(n * sizeof(float));
  widenHalf(dtype, array.data.data(), reinterpret_cast<float *>(wide.data()),
            int64_t(n));
  array.data = std::move(wide);
}

namespace {

/// Arrays packed into bytes and back, to send a stage's state to rank 0.
void packArrays(const std::map<std::string, NpyArray> &arrays,
                std::vector<uint8_t> &out) {
  auto put = [&](const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    out.insert(out.end(), b, b + n);
  };
  auto putSize = [&](uint64_t n) { put(&n, sizeof(n)); };
  putSize(arrays.size());
  for (const auto &[name, a] : arrays) {
    putSize(name.size());
    put(name.data(), name.size());
    putSize(a.descr.size());
    put(a.descr.data(), a.descr.size());
    putSize(a.shape.size());
    put(a.shape.data(), a.shape.size() * sizeof(int64_t));
    putSize(a.data.size());
    put(a.data.data(), a.data.size());
  }
}

void unpackArrays(const std::vector<uint8_t> &in,
                  std::map<std::string, NpyArray> &arrays) {
  size_t at = 0;
  auto get = [&](void *p, size_t n) {
    if (n > in.size() - at)
      throw std::runtime_error("a stage's state arrived truncated");
    std::memcpy(p, in.data() + at, n);
    at += n;
  };
  auto getSize = [&] {
    uint64_t n = 0;
    get(&n, sizeof(n));
    return n;
  };
  for (uint64_t count = getSize(); count-- > 0;) {
    std::string name(getSize(), '\0');
    get(name.data(), name.size());
    NpyArray a;
    a.descr.resize(getSize());
    get(a.descr.data(), a.descr.size());
    a.shape.resize(getSize());
    get(a.shape.data(), a.shape.size() * sizeof(int64_t));
    a.data.resize(getSize());
    get(a.data.data(), a.data.size());
    arrays[name] = std::move(a);
  }
}

} // namespace

void braid::rt::gatherStages(const Plan &plan, int rank, int world,
                             std::map<std::string, NpyArray> &out) {
  RankPlace mine = placeRank(plan, rank);
  bool sender = mine.dpIndex == 0 && mine.tpIndex == 0 && mine.ppIndex > 0;
  const int tag = 7301;
  if (sender) {
    std::vector<uint8_t> bytes;
    packArrays(out, bytes);
    if (bytes.size() > uint64_t(std::numeric_limits<int>::max()))
      throw std::runtime_error("stage " + std::to_string(mine.ppIndex) +
                               "'s state is " + std::to_string(bytes.size()) +
                               " bytes, more than one MPI message counts; "
                               "save with {rank} in the path");
    uint64_t n = bytes.size();
    endPhase("saving: sending stage " + std::to_string(mine.ppIndex) +
             "'s state to rank 0");
    MPI_Send(&n, 1, MPI_UINT64_T, 0, tag, MPI_COMM_WORLD);
    MPI_Send(bytes.data(), int(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
  }
  if (rank != 0)
    return;
  for (int r = 0; r < world; ++r) {
    RankPlace p = placeRank(plan, r);
    if (!(p.dpIndex == 0 && p.tpIndex == 0 && p.ppIndex > 0))
      continue;
    uint64_t n = 0;
    endPhase("saving: receiving stage " + std::to_string(p.ppIndex) +
             "'s state from rank " + std::to_string(r) +
             ", which never sent it");
    MPI_Recv(&n, 1, MPI_UINT64_T, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (n > uint64_t(std::numeric_limits<int>::max()))
      throw std::runtime_error("rank " + std::to_string(r) +
                               " announced a state of " + std::to_string(n) +
                               " bytes");
    std::vector<uint8_t> bytes(n);
    MPI_Recv(bytes.data(), int(n), MPI_BYTE, r, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    unpackArrays(bytes, out);
  }
}
