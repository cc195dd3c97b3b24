//===- CostModel.h - what kernels and collectives cost on a cluster -*- C++
//-*-===//
//
// The one cost model of braid. The compiler's passes (bucket sizing) and the
// simulator (braid-run --backend=sim) both time work through these
// functions, from a cluster description (common/clusters/*.json, or a file
// of the same form). A dependency-free library: no plan, no MPI, and no
// exception crosses its API (errors are returned). Kernels: a roofline on the
// kernel's flops and bytes (as CostOpInterface reports them) with efficiency
// factors and a launch overhead. Collectives: NCCL 2.30.7's tuning model
// (v2: per algorithm and protocol, effective bandwidths, NVLS) where the
// cluster has an "nccl" object, else ring and tree formulas of the link
// rates, hierarchical across nodes (v1). docs/CostModel.md gives the
// formulas and the sources of the numbers.
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

/// A matrix product's sizes: `batch` products of [m, k] x [k, n]. Empty
/// (all 0) for a kernel that is not one. CostOpInterface's getProductShape
/// gives it and the plan records it with the kernel's flops.
struct ProductShape {
  uint64_t batch = 0, m = 0, n = 0, k = 0;
  bool empty() const { return batch == 0 || m == 0 || n == 0 || k == 0; }
};

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
  /// Cost model v2 for matrix products (docs/CostModel.md): the SMs, the
  /// tile of one step of a thread block (tileM x tileN of the output, tileK
  /// of the reduction), and the seconds a product spends filling and
  /// draining the SMs' pipelines. smCount 0: every product at peak x matmul
  /// efficiency (v1).
  int64_t smCount = 0, tileM = 0, tileN = 0, tileK = 0;
  double pipelineFill = 0;
  /// Cost model v2 for collectives (docs/CostModel.md): NCCL's own tuning
  /// model at a pinned version, with the effective bandwidths below. Set
  /// when the description has an "nccl" object; without one, collectives
  /// use the v1 formulas of the link rates and latencies above.
  struct Nccl {
    bool enabled = false;
    /// Which of NCCL's per-architecture constants apply (LL's bandwidth
    /// cap): Hopper (sm90) or Ampere (sm80).
    bool hopper = false;
    /// One GPU's NVLink bandwidth as NCCL drives it (its per-link rate
    /// times the links), B/s.
    double nvlinkBus = 0;
    /// The all-reduce bus bandwidth with NVLink SHARP (NVLS) inside a node,
    /// B/s; 0 where the NVSwitch has none.
    double nvlsBus = 0;
    /// The network: NICs per node and what NCCL moves through one, B/s.
    int64_t nicsPerNode = 0;
    double nicBytesPerSecond = 0;
  } nccl;

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
/// bytes / (HBM bandwidth * memory efficiency). A matrix product (`product`
/// not empty) on a cluster with `gemm_tiles` runs its tiles' steps spread
/// over the SMs, plus the pipelines' fill; a calibration's measured rates
/// come first. A
/// kernel with no flops and no bytes (a view) takes no time and launches
/// nothing.
double kernelSeconds(const Cluster &cluster, uint64_t flops, uint64_t bytes,
                     DType dtype, const ProductShape &product = {});

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
  /// The algorithm and protocol, for people ("ring/LL128", "nvls/Simple").
  const char *name = "";
  double at(double bytes) const { return latency + bytes * secondsPerByte; }
};

/// The algorithms NCCL chooses among for `kind` on `group`; collectiveSeconds
/// is the least of them at the given bytes. v1: ring, and for an all-reduce
/// across nodes a tree. v2: each algorithm NCCL has for it (ring, tree,
/// NVLS, NVLS tree) with each protocol (LL, LL128, Simple).
std::vector<AffineCost> collectiveAlgorithms(const Cluster &cluster,
                                             CollectiveKind kind,
                                             const GroupShape &group);

/// Seconds a collective alone takes, `bytes` being what one rank
/// moves (getCommBytes: for all_gather, what it receives in all). The faster of
/// a ring (hierarchical across nodes) and a tree, as NCCL chooses.
double collectiveSeconds(const Cluster &cluster, CollectiveKind kind,
                         uint64_t bytes, const GroupShape &group);
/// The algorithm collectiveSeconds takes at `bytes` (its `name`).
const char *collectiveAlgorithm(const Cluster &cluster, CollectiveKind kind,
                                uint64_t bytes, const GroupShape &group);

} // namespace braid::cost

#endif // BRAID_COMMON_COSTMODEL_H
