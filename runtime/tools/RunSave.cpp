//===- RunSave.cpp - what braid-run writes for --save ---------------------===//
//
// RunSave.h.
//
//===----------------------------------------------------------------------===//

#include "RunSave.h"

#include "RunData.h"

#include "RunDeadline.h"
#include "RunStartup.h"

#include "braid-runtime/HalfFloat.h"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
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

void braid::rt::checkWritable(const std::string &save, int rank,
                              const char *option) {
  if (save.empty() || (rank != 0 && save.find("{rank}") == std::string::npos))
    return;
  std::string path = savePathOf(save, rank);
  bool existed = std::ifstream(path).good();
  std::ofstream probe(path, std::ios::app | std::ios::binary);
  if (!probe)
    throw std::runtime_error("cannot write " + std::string(option) + " file '" +
                             path + "': " + std::strerror(errno));
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

// --save: rank 0 writes OUT.npz; a path with {rank} is written by every
// rank, {rank} replaced by its number. A tensor-parallel value is
// gathered from the ranks of its group first, so files hold global values
// (every rank takes part in the gathers, writing or not).
void braid::rt::saveState(const Options &o, const Plan &plan, Backend &backend,
                          const Inputs &inputs, int rank, int world) {
  if (o.save.empty())
    return;
  writeState(o, plan, backend, inputs, rank, world, o.save,
             inputs.stepsDone + inputs.steps,
             !inputs.schedules.empty() || o.samples ||
                 (!o.data.empty() && isTokenFile(o.data)));
}

void braid::rt::writeState(const Options &o, const Plan &plan, Backend &backend,
                           const Inputs &inputs, int rank, int world,
                           const std::string &pattern, int64_t stepsTaken,
                           bool withStepsDone) {
  bool writes = rank == 0 || pattern.find("{rank}") != std::string::npos;
  RankPlace place = placeRank(plan, rank);
  MPI_Comm tpComm = MPI_COMM_NULL;
  // One communicator per tensor-parallel group: the ranks of one
  // data-parallel replica and one pipeline stage.
  endPhase("saving: making the tensor-parallel groups' communicators");
  if (plan.tpAxis >= 0)
    MPI_Comm_split(MPI_COMM_WORLD,
                   int(place.dpIndex * place.ppSize + place.ppIndex),
                   int(place.tpIndex), &tpComm);
  // ZeRO: one per group of ranks that hold pieces of one tensor-parallel
  // piece (the same place on every other axis).
  MPI_Comm dpComm = MPI_COMM_NULL;
  if (plan.dpAxis >= 0) {
    endPhase("saving: making the data-parallel groups' communicators");
    MPI_Comm_split(MPI_COMM_WORLD,
                   int(place.tpIndex * place.ppSize + place.ppIndex),
                   int(place.shardIndex), &dpComm);
  }
  std::string savePath = savePathOf(pattern, rank);
  try {
    std::map<std::string, NpyArray> out;
    auto save = [&](const Binding &b) {
      const Buffer &buffer = plan.buffers[b.buffer];
      NpyArray &array = out[b.name];
      array.descr = descrOf(buffer.dtype);
      array.shape = buffer.shape;
      array.data.resize(buffer.bytes);
      backend.read(buffer, array.data.data());
      // Gathers the pieces of `group`'s `size` ranks split along `dim` in
      // `blocks` into the value of `shape`.
      auto gather = [&](MPI_Comm group, int64_t size, int32_t dim,
                        const std::vector<int64_t> &blocks,
                        std::vector<int64_t> shape, const char *axis) {
        uint64_t bytes = array.data.size();
        if (bytes > uint64_t(std::numeric_limits<int>::max()))
          throw std::runtime_error(
              "cannot gather '" + b.name +
              "' for --save: " + std::to_string(bytes) +
              " bytes per rank, more than MPI_Allgather counts");
        std::vector<uint8_t> pieces(bytes * uint64_t(size));
        endPhase("saving: gathering '" + b.name + "' from its " + axis +
                 " group");
        MPI_Allgather(array.data.data(), int(bytes), MPI_BYTE, pieces.data(),
                      int(bytes), MPI_BYTE, group);
        array.shape = std::move(shape);
        array.data.assign(pieces.size(), 0);
        for (int64_t r = 0; r < size; ++r)
          copyPiece(pieces.data() + uint64_t(r) * bytes, array.data.data(),
                    array.shape, dtypeBytes(buffer.dtype), dim, blocks, size, r,
                    /*toPiece=*/false);
      };
      if (b.dpSplitDim >= 0)
        gather(dpComm, place.shards, b.dpSplitDim, {},
               tensorParallelShape(plan, b), "data-parallel");
      if (b.splitDim >= 0)
        gather(tpComm, place.tpSize, b.splitDim, b.splitBlocks,
               globalShape(plan, b), "tensor-parallel");
      widenSaved(array, buffer.dtype);
    };
    auto isState = [](const Binding &b) {
      return b.role == Role::Parameter || b.role == Role::OptimizerState;
    };
    for (const Binding &b : plan.arguments)
      if (isState(b))
        save(b);
    // The schedules and the steps taken, so that the file resumes the
    // run at the next step of its schedule and of its token file.
    if (withStepsDone) {
      for (const Binding &b : plan.arguments) {
        auto it = inputs.schedules.find(b.buffer);
        if (b.role != Role::Hyperparameter || it == inputs.schedules.end())
          continue;
        NpyArray &array = out[b.name];
        array.descr = "<f4";
        array.shape = {int64_t(it->second.size())};
        array.data.resize(it->second.size() * sizeof(float));
        std::memcpy(array.data.data(), it->second.data(), array.data.size());
      }
      NpyArray &done = out[kStepsDoneName];
      done.descr = "<i8";
      done.shape = {};
      done.data.resize(sizeof(stepsTaken));
      std::memcpy(done.data.data(), &stepsTaken, sizeof(stepsTaken));
    }
    // The other results of the last step (the loss, unnamed results).
    for (const Binding &b : plan.results)
      if (!isState(b) && !out.count(b.name))
        save(b);
    if (plan.ppAxis >= 0 && pattern.find("{rank}") == std::string::npos)
      gatherStages(plan, rank, world, out);
    if (writes) {
      // writeNpz writes a temporary file and renames it: a rank stopped
      // meanwhile leaves no partial file.
      endPhase("saving: writing '" + savePath + "'");
      writeNpz(savePath, out);
    }
  } catch (const std::exception &e) {
    rankError(rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (tpComm != MPI_COMM_NULL)
    MPI_Comm_free(&tpComm);
  if (dpComm != MPI_COMM_NULL)
    MPI_Comm_free(&dpComm);
}

std::string braid::rt::checkpointPath(const std::string &dir, int64_t steps) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%08lld.npz", (long long)steps);
  return (std::filesystem::path(dir) / name).string();
}

namespace {

/// The checkpoints in `dir` by the steps they hold: the files named
/// step-N.npz (a write that did not finish left libzip's temporary file,
/// step-N.npz.XXXXXX, which is not one).
std::map<int64_t, std::string> checkpointsIn(const std::string &dir) {
  static const std::regex name(R"(step-([0-9]{1,18})\.npz)");
  std::map<int64_t, std::string> found;
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory)
      return found;
    throw std::runtime_error("cannot read the checkpoint folder " + dir + ": " +
                             error.message());
  }
  for (const auto &entry : it) {
    std::smatch m;
    std::string file = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(file, m, name))
      found[std::stoll(m[1])] = entry.path().string();
  }
  return found;
}

} // namespace

std::string braid::rt::newestCheckpoint(const std::string &dir) {
  std::map<int64_t, std::string> found = checkpointsIn(dir);
  return found.empty() ? std::string() : found.rbegin()->second;
}

void braid::rt::prepareCheckpointDir(const Options &o, int rank) {
  if (o.checkpointDir.empty() || rank != 0)
    return;
  std::error_code error;
  std::filesystem::create_directories(o.checkpointDir, error);
  if (error || !std::filesystem::is_directory(o.checkpointDir))
    throw std::runtime_error(
        "cannot make the checkpoint folder " + o.checkpointDir + ": " +
        (error ? error.message() : std::string("not a folder")));
  checkWritable(checkpointPath(o.checkpointDir, 0), rank, "--checkpoint-dir");
}

void braid::rt::saveCheckpoint(const Options &o, const Plan &plan,
                               Backend &backend, const Inputs &inputs, int rank,
                               int world, int64_t stepsTaken) {
  writeState(o, plan, backend, inputs, rank, world,
             checkpointPath(o.checkpointDir, stepsTaken), stepsTaken,
             /*withStepsDone=*/true);
  if (rank != 0)
    return;
  // The newest --keep-checkpoints stay; a failure to remove an older one
  // is not worth stopping the run for.
  std::map<int64_t, std::string> found = checkpointsIn(o.checkpointDir);
  int64_t extra = int64_t(found.size()) - o.keepCheckpoints;
  for (auto it = found.begin(); extra > 0; ++it, --extra)
    std::remove(it->second.c_str());
}
