//===- CostModel.h - what kernels and collectives cost on a cluster -*- C++
//-*-===//
//
// The one cost model of braid. The compiler's passes (bucket sizing) and the
// simulator (braid-run --backend=sim) both time work through these
// functions, from a cluster description (common/clusters/*.json, or a file
// of the same form). A dependency-free library: no plan, no MPI, and no
// exception crosses its API (errors are returned). Kernels: a roofline on the
// kernel's flops and bytes (as CostOpInterface reports them) with efficiency
// factors and a launch overhead. Collectives: NCCL-style ring and tree
// formulas, hierarchical across nodes. docs/CostModel.md gives the formulas and
// the sources of the numbers.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_COSTMODEL_H
#define BRAID_COMMON_COSTMODEL_H

#include "braid-common/CollectiveKind.h"
#include "braid-common/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::cost {

/// A homogeneous cluster: `nodes` nodes of `gpusPerNode` GPUs, NVLink
/// inside a node, one network port per GPU between nodes. Rates are in
/// units per second, latencies in seconds.
struct Cluster {
  std::string name, description, gpu;
  int64_t nodes = 1, gpusPerNode = 1;
  /// Dense peak FLOP/s per GPU for f32, bf16, f16, f64.
  double peakF32 = 0, peakBF16 = 0, peakF16 = 0, peakF64 = 0;
  /// One GPU's memory as the driver reports it (nvidia-smi's total); 0
  /// when the description does not say (no fit check).
  uint64_t gpuMemoryBytes = 0;
  double hbmBytesPerSecond = 0;
  double matmulEfficiency = 1, memoryEfficiency = 1;
  double kernelLaunch = 0;
  double nvlinkBytesPerSecond = 0, nvlinkLatency = 0;
  double networkBytesPerSecond = 0, networkLatency = 0, treeNetworkLatency = 0;
  double collectiveBaseLatency = 0;
  /// While a collective is in flight, compute runs 1 + this times slower,
  /// and the other way round.
  double computeSlowdownDuringComm = 0, commSlowdownDuringCompute = 0;
  /// Measured matrix-product rates (a calibration file, docs/CostModel.md):
  /// per dtype, (cube size n, FLOP/s) by n ascending. A kernel of that
  /// dtype runs at the rate interpolated at its cube size (flops / 2)^(1/3)
  /// instead of peak x matmul efficiency; empty: no table.
  struct Rate {
    double n = 0, flopsPerSecond = 0;
  };
  std::vector<Rate> gemmF32, gemmBF16, gemmF16;

  int64_t gpus() const { return nodes * gpusPerNode; }
  double peakFlops(DType dtype) const;
};

/// The names of the bundled presets (a100-8, h100-8, ...).
std::vector<std::string> clusterPresetNames();
/// The JSON text of a preset or of a JSON file by path (anything with a '/'
/// or ending in .json): what a plan records. False, with `error` naming the
/// problem, if there is none.
bool readClusterText(const std::string &nameOrPath, std::string &text,
                     std::string &error);
/// A preset by name, or a JSON file by path. False, with `error` naming the
/// problem, if it cannot be read or is not valid.
bool loadCluster(const std::string &nameOrPath, Cluster &cluster,
                 std::string &error);
/// Parses a cluster description; `origin` names it in messages.
bool parseCluster(const std::string &json, const std::string &origin,
                  Cluster &cluster, std::string &error);

/// Seconds one kernel takes alone on one GPU of `cluster`: the launch
/// overhead plus the larger of flops / (peak(dtype) * matmul efficiency) and
/// bytes / (HBM bandwidth * memory efficiency). A kernel with no flops and
/// no bytes (a view) takes no time and launches nothing.
double kernelSeconds(const Cluster &cluster, uint64_t flops, uint64_t bytes,
                     DType dtype);

/// How a group of ranks sits on the cluster: `ranks` in all, on `nodes`
/// nodes, at most `perNode` on one node.
struct GroupShape {
  int64_t ranks = 1, nodes = 1, perNode = 1;
};

/// The shape of the group of ranks `members` (world ranks; rank r is on
/// node r / gpusPerNode).
GroupShape groupShapeOf(const Cluster &cluster,
                        const std::vector<int64_t> &members);

/// A collective algorithm's time as a function of the bytes: latency +
/// bytes * secondsPerByte.
struct AffineCost {
  double latency = 0, secondsPerByte = 0;
  double at(double bytes) const { return latency + bytes * secondsPerByte; }
};

/// The algorithms NCCL chooses among for `kind` on `group` (ring, and for
/// an all-reduce across nodes a tree); collectiveSeconds is the least of
/// them at the given bytes.
std::vector<AffineCost> collectiveAlgorithms(const Cluster &cluster,
                                             CollectiveKind kind,
                                             const GroupShape &group);

/// Seconds a collective alone takes, `bytes` being what one rank
/// moves (getCommBytes: for all_gather, what it receives in all). The faster of
/// a ring (hierarchical across nodes) and a tree, as NCCL chooses.
double collectiveSeconds(const Cluster &cluster, CollectiveKind kind,
                         uint64_t bytes, const GroupShape &group);

} // namespace braid::cost

#endif // BRAID_COMMON_COSTMODEL_H
