//===- CostModel.cpp - cluster descriptions and the cost formulas ---------===//

#include "braid-common/CostModel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace braid;
using namespace braid::cost;
using Json = nlohmann::json;

namespace braid::cost {
/// The bundled presets, (name, JSON text); generated from common/clusters.
const std::vector<std::pair<const char *, const char *>> &clusterPresets();
} // namespace braid::cost

double Cluster::peakFlops(DType dtype) const {
  switch (dtype) {
  case DType::BF16:
    return peakBF16;
  case DType::F16:
    return peakF16;
  case DType::F64:
    return peakF64;
  case DType::F32:
  case DType::I1:
  case DType::I32:
  case DType::I64:
    return peakF32;
  }
  return peakF32;
}

std::vector<std::string> cost::clusterPresetNames() {
  std::vector<std::string> names;
  for (const auto &[name, text] : clusterPresets())
    names.push_back(name);
  return names;
}

namespace {

/// A bad description, inside this file only: the API returns errors.
struct ClusterError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads the fields of one JSON object, each once, and complains about
/// missing, mistyped, out-of-range and unknown keys.
class Reader {
public:
  Reader(const Json &object, std::string origin)
      : object(object), origin(std::move(origin)) {}

  [[noreturn]] void fail(const std::string &message) const {
    throw ClusterError(origin + ": " + message);
  }
  const Json &get(const std::string &key) {
    seen.insert(key);
    auto it = object.find(key);
    if (it == object.end())
      fail("missing \"" + key + "\"");
    return *it;
  }
  std::string string(const std::string &key) {
    const Json &v = get(key);
    if (!v.is_string())
      fail("\"" + key + "\" must be a string");
    return v.get<std::string>();
  }
  /// A number in [lo, hi].
  double number(const std::string &key, double lo, double hi) {
    const Json &v = get(key);
    if (!v.is_number())
      fail("\"" + key + "\" must be a number");
    double x = v.get<double>();
    if (!(x >= lo && x <= hi)) {
      std::ostringstream os;
      os << "\"" << key << "\" is " << x << ", outside [" << lo << ", " << hi
         << "]";
      fail(os.str());
    }
    return x;
  }
  bool has(const std::string &key) const { return object.contains(key); }
  int64_t integer(const std::string &key, int64_t lo, int64_t hi) {
    const Json &v = get(key);
    if (!v.is_number_integer())
      fail("\"" + key + "\" must be an integer");
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      fail("\"" + key + "\" is " + std::to_string(x) + ", outside [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  void noOthers() const {
    for (auto it = object.begin(); it != object.end(); ++it)
      if (!seen.count(it.key()))
        fail("unknown key \"" + it.key() + "\"");
  }

private:
  const Json &object;
  std::string origin;
  std::set<std::string> seen;
};

} // namespace

/// What braid-gpu-bench measured on one GPU (its calibration.json) replaces
/// the datasheet's figures: GEMM rates by dtype and size, the achieved
/// memory bandwidth, the launch time and the memory size.
static void calibrate(Cluster &c, const Json &json, const std::string &origin) {
  if (!json.is_object())
    throw ClusterError(origin + ": a calibration is a JSON object (or, in a "
                                "cluster file, the path of one)");
  Reader r(json, origin);
  r.string("device"); // for people, as the cluster's "gpu"
  r.integer("sm_count", 1, 1 << 20);
  c.gpuMemoryBytes = uint64_t(r.integer("memory_bytes", 1, int64_t(1) << 50));
  const Json &gemm = r.get("gemm");
  if (!gemm.is_array() || gemm.empty())
    r.fail("\"gemm\" must be a non-empty array of measured products");
  for (size_t i = 0; i < gemm.size(); ++i) {
    std::string where = origin + ": gemm[" + std::to_string(i) + "]";
    if (!gemm[i].is_object())
      throw ClusterError(where + ": a measured product is a JSON object");
    Reader g(gemm[i], where);
    std::string dtype = g.string("dtype");
    double m = double(g.integer("m", 1, 1 << 20));
    double n = double(g.integer("n", 1, 1 << 20));
    double k = double(g.integer("k", 1, 1 << 20));
    double rate = g.number("tflops", 1e-6, 1e6) * 1e12;
    g.noOthers();
    std::vector<Cluster::Rate> *table = dtype == "f32"    ? &c.gemmF32
                                        : dtype == "bf16" ? &c.gemmBF16
                                        : dtype == "f16"  ? &c.gemmF16
                                                          : nullptr;
    // TF32 is cuBLAS's math mode for f32 products when asked for; braid's
    // f32 matmuls do not ask: the rate is recorded, not used.
    if (dtype == "tf32")
      continue;
    if (!table)
      g.fail("unknown dtype \"" + dtype + "\" (f32, tf32, bf16, f16)");
    table->push_back({std::cbrt(m * n * k), rate});
  }
  for (std::vector<Cluster::Rate> *table :
       {&c.gemmF32, &c.gemmBF16, &c.gemmF16})
    std::sort(table->begin(), table->end(),
              [](const Cluster::Rate &a, const Cluster::Rate &b) {
                return a.n < b.n;
              });
  // f16 products run on the same tensor cores as bf16.
  if (c.gemmF16.empty())
    c.gemmF16 = c.gemmBF16;
  const Json &bandwidth = r.get("memory_bandwidth_gbs");
  if (!bandwidth.is_object())
    r.fail("\"memory_bandwidth_gbs\" must be an object of copy, kernel");
  Reader b(bandwidth, origin + ": memory_bandwidth_gbs");
  b.number("copy", 1e-3, 1e6);
  double kernel = b.number("kernel", 1e-3, 1e6) * 1e9;
  b.noOthers();
  c.memoryEfficiency = std::min(1.0, kernel / c.hbmBytesPerSecond);
  const Json &launch = r.get("launch_us");
  if (!launch.is_object())
    r.fail("\"launch_us\" must be an object of host, device");
  Reader l(launch, origin + ": launch_us");
  l.number("host", 0, 1e6);
  c.kernelLaunch = l.number("device", 0, 1e6) * 1e-6;
  l.noOthers();
  r.noOthers();
}

/// The NCCL version whose tuning model v2 follows: its constants are below
/// (ncclTunerConstantsDefaults in src/graph/tuning.cc).
static constexpr const char *ncclVersion = "2.30.7";

/// Cost model v2's description of the collectives (docs/CostModel.md).
static void readNccl(Cluster &c, const Json &json, const std::string &origin) {
  if (!json.is_object())
    throw ClusterError(origin + ": \"nccl\" must be an object of version, "
                                "arch, nvlink_bus_gb_per_s, nvls_bus_gb_per_s, "
                                "nics_per_node, nic_gb_per_s");
  Reader r(json, origin);
  std::string version = r.string("version");
  if (version != ncclVersion)
    r.fail("version \"" + version + "\": braid has the tuning model of NCCL " +
           ncclVersion + " only");
  std::string arch = r.string("arch");
  if (arch != "hopper" && arch != "ampere")
    r.fail("unknown arch \"" + arch + "\" (hopper, ampere)");
  c.nccl.hopper = arch == "hopper";
  c.nccl.nvlinkBus = r.number("nvlink_bus_gb_per_s", 1e-3, 1e6) * 1e9;
  c.nccl.nvlsBus = r.number("nvls_bus_gb_per_s", 0, 1e6) * 1e9;
  c.nccl.nicsPerNode = r.integer("nics_per_node", 1, 1 << 10);
  c.nccl.nicBytesPerSecond = r.number("nic_gb_per_s", 1e-3, 1e6) * 1e9;
  r.noOthers();
  c.nccl.enabled = true;
}

static Cluster parse(const std::string &text, const std::string &origin) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error &e) {
    throw ClusterError(origin + ": not valid JSON: " + e.what());
  }
  if (!json.is_object())
    throw ClusterError(origin + ": a cluster description is a JSON object");
  Reader r(json, origin);
  Cluster c;
  constexpr double big = 1e12;
  c.name = r.string("name");
  c.description = r.string("description");
  c.gpu = r.string("gpu");
  c.nodes = r.integer("nodes", 1, 1 << 20);
  c.gpusPerNode = r.integer("gpus_per_node", 1, 1 << 10);
  const Json &peak = r.get("peak_tflops");
  if (!peak.is_object())
    r.fail("\"peak_tflops\" must be an object of f32, bf16, f16, f64");
  Reader p(peak, origin + ": peak_tflops");
  c.peakF32 = p.number("f32", 1e-3, 1e6) * 1e12;
  c.peakBF16 = p.number("bf16", 1e-3, 1e6) * 1e12;
  c.peakF16 = p.number("f16", 1e-3, 1e6) * 1e12;
  c.peakF64 = p.number("f64", 1e-3, 1e6) * 1e12;
  p.noOthers();
  // Optional: a cluster file of its own may leave it out (no fit check).
  if (r.has("gpu_memory_gib"))
    c.gpuMemoryBytes =
        uint64_t(r.number("gpu_memory_gib", 1e-6, 1e6) * double(1ull << 30));
  c.hbmBytesPerSecond = r.number("hbm_gb_per_s", 1e-3, 1e6) * 1e9;
  c.matmulEfficiency = r.number("matmul_efficiency", 1e-3, 1);
  c.memoryEfficiency = r.number("memory_efficiency", 1e-3, 1);
  c.kernelLaunch = r.number("kernel_launch_us", 0, big) * 1e-6;
  c.nvlinkBytesPerSecond = r.number("nvlink_gb_per_s", 1e-3, 1e6) * 1e9;
  c.nvlinkLatency = r.number("nvlink_latency_us", 0, big) * 1e-6;
  c.networkBytesPerSecond = r.number("network_gb_per_s", 1e-3, 1e6) * 1e9;
  c.networkLatency = r.number("network_latency_us", 0, big) * 1e-6;
  c.treeNetworkLatency = r.number("tree_network_latency_us", 0, big) * 1e-6;
  c.collectiveBaseLatency =
      r.number("collective_base_latency_us", 0, big) * 1e-6;
  c.computeSlowdownDuringComm =
      r.number("compute_slowdown_during_comm", 0, 100);
  c.commSlowdownDuringCompute =
      r.number("comm_slowdown_during_compute", 0, 100);
  if (r.has("calibration"))
    calibrate(c, r.get("calibration"), origin + ": calibration");
  if (r.has("nccl"))
    readNccl(c, r.get("nccl"), origin + ": nccl");
  if (r.has("gemm_tiles")) {
    const Json &tiles = r.get("gemm_tiles");
    if (!tiles.is_object())
      r.fail("\"gemm_tiles\" must be an object of sm_count, tile_m, tile_n, "
             "tile_k, pipeline_fill_us");
    Reader t(tiles, origin + ": gemm_tiles");
    c.smCount = t.integer("sm_count", 1, 1 << 20);
    c.tileM = t.integer("tile_m", 1, 1 << 16);
    c.tileN = t.integer("tile_n", 1, 1 << 16);
    c.tileK = t.integer("tile_k", 1, 1 << 16);
    c.pipelineFill = t.number("pipeline_fill_us", 0, 1e6) * 1e-6;
    t.noOthers();
  }
  r.noOthers();
  return c;
}

bool cost::parseCluster(const std::string &text, const std::string &origin,
                        Cluster &cluster, std::string &error) {
  try {
    cluster = parse(text, origin);
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

/// A cluster file's "calibration" may name a file (braid-gpu-bench's
/// output), relative to the cluster file: its text replaces the name, so
/// that what a plan records is whole.
static bool inlineCalibration(const std::string &path, std::string &text,
                              std::string &error) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("calibration") ||
      !json["calibration"].is_string())
    return true; // parseCluster reports what is wrong, if anything.
  std::string name = json["calibration"].get<std::string>();
  std::string file = name;
  size_t slash = path.rfind('/');
  if (!name.empty() && name[0] != '/' && slash != std::string::npos)
    file = path.substr(0, slash + 1) + name;
  std::ifstream in(file);
  if (!in) {
    error = path + ": cannot open calibration file '" + file + "'";
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Json calibration =
      Json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (calibration.is_discarded()) {
    error = path + ": calibration file '" + file + "' is not valid JSON";
    return false;
  }
  json["calibration"] = calibration;
  text = json.dump(2);
  return true;
}

bool cost::readClusterText(const std::string &nameOrPath, std::string &text,
                           std::string &error) {
  for (const auto &[name, json] : clusterPresets())
    if (nameOrPath == name) {
      text = json;
      return true;
    }
  bool isPath = nameOrPath.find('/') != std::string::npos ||
                (nameOrPath.size() > 5 &&
                 nameOrPath.compare(nameOrPath.size() - 5, 5, ".json") == 0);
  if (!isPath) {
    std::string known;
    for (const std::string &n : clusterPresetNames())
      known += (known.empty() ? "" : ", ") + n;
    error = "unknown cluster '" + nameOrPath + "' (presets: " + known +
            "; or give a .json file)";
    return false;
  }
  std::ifstream in(nameOrPath);
  if (!in) {
    error = "cannot open cluster file '" + nameOrPath + "'";
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return inlineCalibration(nameOrPath, text, error);
}

bool cost::loadCluster(const std::string &nameOrPath, Cluster &cluster,
                       std::string &error) {
  std::string text;
  if (!readClusterText(nameOrPath, text, error))
    return false;
  bool preset = false;
  for (const auto &[name, json] : clusterPresets())
    preset |= nameOrPath == name;
  return parseCluster(text, (preset ? "preset " : "") + nameOrPath, cluster,
                      error);
}

/// The FLOP/s of a kernel of `flops` in `dtype`: interpolated in the
/// calibration's table at its cube size, linearly in log n between measured
/// sizes and held at the ends; else peak x matmul efficiency.
static double gemmRate(const Cluster &c, uint64_t flops, DType dtype) {
  const std::vector<Cluster::Rate> *table = dtype == DType::BF16  ? &c.gemmBF16
                                            : dtype == DType::F16 ? &c.gemmF16
                                            : dtype == DType::F32 ? &c.gemmF32
                                                                  : nullptr;
  if (!table || table->empty())
    return c.peakFlops(dtype) * c.matmulEfficiency;
  double n = std::cbrt(double(flops) / 2);
  if (n <= table->front().n)
    return table->front().flopsPerSecond;
  if (n >= table->back().n)
    return table->back().flopsPerSecond;
  size_t i = 1;
  while ((*table)[i].n < n)
    ++i;
  const Cluster::Rate &lo = (*table)[i - 1], &hi = (*table)[i];
  double t = std::log(n / lo.n) / std::log(hi.n / lo.n);
  return lo.flopsPerSecond + t * (hi.flopsPerSecond - lo.flopsPerSecond);
}

/// Seconds the matrix product `shape` computes for (v2): steps of a thread
/// block, each a tileM x tileN tile of the output over tileK of the
/// reduction (a product smaller than a tile runs tiles of its own size),
/// spread evenly over the SMs (stream-K, as cuBLAS and CUTLASS split a
/// product of few tiles), each SM at 1/smCount of peak x efficiency; plus
/// the time to fill and drain the SMs' pipelines.
static double productSeconds(const Cluster &c, const ProductShape &shape,
                             DType dtype) {
  double m = double(shape.m), n = double(shape.n), k = double(shape.k);
  double tm = std::min(double(c.tileM), m), tn = std::min(double(c.tileN), n),
         tk = std::min(double(c.tileK), k);
  double steps = double(shape.batch) * std::ceil(m / tm) * std::ceil(n / tn) *
                 std::ceil(k / tk);
  double perSM = std::ceil(steps / double(c.smCount));
  double smRate = c.peakFlops(dtype) * c.matmulEfficiency / double(c.smCount);
  return perSM * 2 * tm * tn * tk / smRate + c.pipelineFill;
}

/// Whether `dtype`'s products have a calibration's measured rates.
static bool calibrated(const Cluster &c, DType dtype) {
  return (dtype == DType::BF16 && !c.gemmBF16.empty()) ||
         (dtype == DType::F16 && !c.gemmF16.empty()) ||
         (dtype == DType::F32 && !c.gemmF32.empty());
}

double cost::kernelSeconds(const Cluster &c, uint64_t flops, uint64_t bytes,
                           DType dtype, const ProductShape &product) {
  if (flops == 0 && bytes == 0)
    return 0;
  double compute = c.smCount > 0 && !product.empty() && !calibrated(c, dtype)
                       ? productSeconds(c, product, dtype)
                       : double(flops) / gemmRate(c, flops, dtype);
  double memory = double(bytes) / (c.hbmBytesPerSecond * c.memoryEfficiency);
  return c.kernelLaunch + std::max(compute, memory);
}

GroupShape cost::groupShapeOf(const Cluster &c,
                              const std::vector<int64_t> &members) {
  GroupShape g;
  g.ranks = int64_t(members.size());
  std::vector<int64_t> perNode;
  for (int64_t r : members) {
    size_t node = size_t(r / c.gpusPerNode);
    if (perNode.size() <= node)
      perNode.resize(node + 1, 0);
    ++perNode[node];
  }
  g.nodes = std::count_if(perNode.begin(), perNode.end(),
                          [](int64_t n) { return n > 0; });
  g.perNode =
      perNode.empty() ? 1 : *std::max_element(perNode.begin(), perNode.end());
  return g;
}

/// Cost model v1: ring and tree formulas of the link rates and latencies.
static std::vector<AffineCost>
v1Algorithms(const Cluster &c, CollectiveKind kind, const GroupShape &group) {
  double p = double(group.ranks), n = double(group.nodes),
         g = double(group.perNode);
  double bNv = c.nvlinkBytesPerSecond, bNet = c.networkBytesPerSecond;
  if (c.nccl.enabled) {
    // v2 times these kinds by the same formulas, at the bandwidths NCCL
    // reaches: the NVLink bus and a GPU's share of its node's NICs.
    bNv = c.nccl.nvlinkBus;
    bNet = double(std::min<int64_t>(group.perNode, c.nccl.nicsPerNode)) *
           c.nccl.nicBytesPerSecond / double(group.perNode);
  }
  double base = c.collectiveBaseLatency;
  bool net = group.nodes > 1;
  // One ring pass inside a node (reduce-scatter or all-gather: g - 1 steps
  // of 1/g of the bytes), and one between nodes over each GPU's 1/g share,
  // one ring per GPU rail.
  AffineCost intra{(g - 1) * c.nvlinkLatency, (g - 1) / g / bNv};
  AffineCost inter{(n - 1) * c.networkLatency, (n - 1) / n / g / bNet};
  switch (kind) {
  case CollectiveKind::AllReduce: {
    // Ring: reduce-scatter in the node, all-reduce of each GPU's share
    // between nodes, all-gather in the node.
    AffineCost ring{base + 2 * intra.latency + 2 * inter.latency,
                    2 * intra.secondsPerByte + 2 * inter.secondsPerByte,
                    "ring"};
    if (!net)
      return {ring};
    // Tree: a chain in the node, a double binary tree between nodes; each
    // share goes up and down the tree once.
    double depth = std::ceil(std::log2(n));
    AffineCost tree{base + 2 * (g - 1) * c.nvlinkLatency +
                        2 * depth * c.treeNetworkLatency,
                    2 * (g - 1) / g / bNv + 2 / g / bNet, "tree"};
    return {ring, tree};
  }
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
    return {{base + intra.latency + inter.latency,
             intra.secondsPerByte + inter.secondsPerByte, "ring"}};
  case CollectiveKind::AllToAll: {
    // The bytes for the other GPUs of the node go over NVLink, the rest
    // over the network, at once: the slower of the two.
    double latency =
        base + (p - 1) * (net ? c.networkLatency : c.nvlinkLatency);
    double viaNvlink = (g - 1) / p / bNv, viaNetwork = (p - g) / p / bNet;
    return {{latency, std::max(viaNvlink, viaNetwork), "direct"}};
  }
  case CollectiveKind::Broadcast:
    return {{base + (p - 1) * (net ? c.networkLatency : c.nvlinkLatency),
             1 / (net ? bNet : bNv), "ring"}};
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
  case CollectiveKind::SendRecv:
  case CollectiveKind::Permute:
    // One transfer to one peer (a send-receive: its two halves at once, one
    // in each direction; a permute: every rank's at once, each link used in
    // one direction by one transfer).
    return {{base + (net ? c.networkLatency : c.nvlinkLatency),
             1 / (net ? bNet : bNv), "direct"}};
  case CollectiveKind::None:
  case CollectiveKind::AxisIndex:
    // Nothing moves (an axis index is known locally).
    return {AffineCost()};
  }
  return {AffineCost()};
}

namespace {
/// NCCL 2.30.7's tuning constants (ncclTunerConstantsDefaults and
/// ncclTopoTuneModel in src/graph/tuning.cc), in microseconds and GB/s, by
/// protocol: LL, LL128, Simple.
enum Protocol { LL, LL128, Simple };
constexpr double baseRing[3] = {6.6, 14.0, 8.4};
constexpr double baseTree[3] = {6.8, 14.0, 8.4};
constexpr double nvlinkRing[3] = {0.6, 1.9, 3.4};
constexpr double nvlinkTree[3] = {0.6, 1.25, 4.0};
constexpr double netRing[3] = {2.7, 4.0, 14.0};
constexpr double netTree[3] = {5.0, 8.5, 14.0};
/// NVLS and NVLS tree run Simple only.
constexpr double nvlinkNvls = 25.0, netNvlsTree = 20.9;
/// The most ranks NVLS takes for all_gather and reduce_scatter
/// (NCCL_MAX_NVLS_ARITY).
constexpr int64_t nvlsMaxArity = 32;
/// The fewest ranks of one node for which NCCL picks NVLS for an
/// all-reduce. Its NVLS graph has one channel a GPU (maxChannels =
/// min(NCCL_MAX_NVLS_ARITY, GPUs) in src/graph/search.cc), so its model
/// gives NVLS an algorithm bandwidth k p, against the ring's B p / (2 (p -
/// 1)): NVLS wins when p - 1 > B / (2 k). NCCL 2.29.2's tuning table on
/// four H100 (NCCL_DEBUG_SUBSYS=TUNING, docs/CostModel.md) has k = 160 / 4
/// = 40 GB/s and B = 360, so p - 1 > 4.5: ring at 2 and 4 GPUs, NVLS at 6
/// and 8, as NCCL was seen to choose.
constexpr int64_t nvlsMinRanks = 6;
/// LL's bandwidth cap (llMaxBws): inside one node by architecture, across
/// nodes by CPU (x86 Intel's row) for two nodes and for more.
constexpr double llMaxAmpere = 87.7, llMaxHopper = 141.0;
constexpr double llMaxTwoNodes = 39.0, llMaxMoreNodes = 20.4;
/// The network's post overhead on x86 Intel (getNetOverhead), 3x for Simple.
constexpr double netOverhead = 1.0;
/// The ring Simple all-reduce's latency plateau across nodes (compute
/// capability 8.0 and up), from ncclTopoGetAlgoTime.
constexpr double ringPlateau = 1.4;
const char *const ringNames[3] = {"ring/LL", "ring/LL128", "ring/Simple"};
const char *const treeNames[3] = {"tree/LL", "tree/LL128", "tree/Simple"};
} // namespace

/// Cost model v2: NCCL's own model of its algorithms and protocols, at the
/// cluster's effective bandwidths (docs/CostModel.md).
static std::vector<AffineCost>
v2Algorithms(const Cluster &c, CollectiveKind kind, const GroupShape &group) {
  if (kind != CollectiveKind::AllReduce &&
      kind != CollectiveKind::ReduceScatter &&
      kind != CollectiveKind::AllGather)
    return v1Algorithms(c, kind, group);
  constexpr double us = 1e-6, gb = 1e9;
  double p = double(group.ranks), n = double(group.nodes),
         g = double(group.perNode);
  bool multi = group.nodes > 1, allReduce = kind == CollectiveKind::AllReduce;
  // A node's share of the network: the NICs of its GPUs in the group, one
  // rail each. Across nodes every ring and tree is bound by the slower of
  // the NVLink bus and that (NCCL runs the phases concurrently).
  double nics = double(std::min<int64_t>(group.perNode, c.nccl.nicsPerNode));
  double network = nics * c.nccl.nicBytesPerSecond;
  double link = multi ? std::min(c.nccl.nvlinkBus, network) : c.nccl.nvlinkBus;
  double llMax = (!multi ? (c.nccl.hopper ? llMaxHopper : llMaxAmpere)
                  : group.nodes <= 2 ? llMaxTwoNodes
                                     : llMaxMoreNodes) *
                 gb;
  double levels = std::floor(std::log2(n));
  std::vector<AffineCost> algorithms;
  // Ring: nsteps steps, the ones between nodes at the network's latency.
  double steps = allReduce ? 2 * (p - 1) : p - 1;
  double interSteps = !multi ? 0 : allReduce ? 2 * (n - 1) : n - 1;
  for (int proto : {LL, LL128, Simple}) {
    double bus = proto == Simple  ? link
                 : proto == LL128 ? 0.92 * link
                                  : std::min(llMax, 0.5 * link);
    double intraLat = nvlinkRing[proto];
    if (multi)
      intraLat = std::max(intraLat, netOverhead * (proto == Simple ? 3 : 1));
    // With one GPU a node, the tree's network latency (fully exposed).
    double interLat = group.perNode == 1 ? netTree[proto] : netRing[proto];
    double latency = baseRing[proto] + (steps - interSteps) * intraLat +
                     interSteps * interLat;
    if (allReduce && multi && proto == Simple)
      latency *= ringPlateau;
    // Bus bandwidth to algorithm bandwidth: ranks / steps.
    algorithms.push_back({latency * us, steps / (p * bus), ringNames[proto]});
  }
  if (!allReduce) {
    // NVLS serves all_gather and reduce_scatter in one node only (across
    // nodes it needs CollNet), Simple only, up to NCCL_MAX_NVLS_ARITY (32)
    // ranks. NCCL's model gives it half the all-reduce's NVLS bus
    // bandwidth (no x 2 for the all-reduce's two pipelined operations),
    // scaled by (g - 1) / g and not converted to an algorithm bandwidth:
    // per byte 1 / (V / 2 (g - 1) / g). On every preset it loses to the
    // ring at every size, as NCCL's own tuning table shows on H100
    // (docs/CostModel.md), but a cluster whose NVLS is far faster than
    // its rings would take it.
    if (c.nccl.nvlsBus > 0 && !multi && group.perNode >= 2 &&
        group.ranks <= nvlsMaxArity)
      algorithms.push_back(
          {nvlinkNvls * us, 2 * g / ((g - 1) * c.nccl.nvlsBus), "nvls/Simple"});
    return algorithms;
  }
  if (multi) {
    // Tree: a chain in the node, a double binary tree between nodes; its
    // algorithm bandwidth is half its bus bandwidth. On two nodes it sends
    // half a ring's bytes between them, so twice the network bounds it.
    double treeLink =
        std::min(c.nccl.nvlinkBus, group.nodes <= 2 ? 2 * network : network);
    for (int proto : {LL, LL128, Simple}) {
      double bus = 0.92 * treeLink;
      if (proto == LL)
        bus = std::min(bus / 3.8, llMax);
      if (proto == LL128)
        bus *= 120.0 / 128.0;
      double latency = baseTree[proto] + 2 * ((g - 1) * nvlinkTree[proto] +
                                              levels * netTree[proto]);
      algorithms.push_back({latency * us, 2 / bus, treeNames[proto]});
    }
  }
  if (c.nccl.nvlsBus > 0 && group.perNode >= 2 &&
      (multi || group.ranks >= nvlsMinRanks)) {
    // NVLink SHARP: the NVSwitch reduces; across nodes a tree of nodes
    // (NVLS tree), whose network is doubled on two nodes. In one node
    // each GPU sends its data to the switch once and reads the sums once,
    // whatever the group's size, so the algorithm bandwidth is the full
    // node's, V gpus / (2 (gpus - 1)) with V measured on all `gpus` of a
    // node: nccl-tests' bus bandwidth at 2 (p - 1) / p of it falls with a
    // smaller group (measured on H100: 207, 251, 266 and 274 GB/s of
    // algorithm bandwidth at 2, 4, 6 and 8 GPUs, docs/CostModel.md).
    double full = double(std::max<int64_t>(c.gpusPerNode, 2));
    double perByte =
        multi ? 2 * (p - 1) /
                    (p * std::min(c.nccl.nvlsBus,
                                  network * (group.nodes <= 2 ? 2 : 1)))
              : 2 * (full - 1) / (full * c.nccl.nvlsBus);
    double latency = nvlinkNvls + (multi ? 2 * levels * netNvlsTree : 0);
    algorithms.push_back(
        {latency * us, perByte, multi ? "nvls-tree/Simple" : "nvls/Simple"});
  }
  return algorithms;
}

std::vector<AffineCost> cost::collectiveAlgorithms(const Cluster &c,
                                                   CollectiveKind kind,
                                                   const GroupShape &group) {
  if (group.ranks <= 1)
    return {{0, 0, "none"}};
  return c.nccl.enabled ? v2Algorithms(c, kind, group)
                        : v1Algorithms(c, kind, group);
}

/// The fastest of the algorithms at `bytes`, as NCCL picks.
static AffineCost fastest(const Cluster &c, CollectiveKind kind, uint64_t bytes,
                          const GroupShape &group) {
  AffineCost best{INFINITY, 0, ""};
  for (const AffineCost &a : collectiveAlgorithms(c, kind, group))
    if (a.at(double(bytes)) < best.at(double(bytes)))
      best = a;
  return best;
}

double cost::collectiveSeconds(const Cluster &c, CollectiveKind kind,
                               uint64_t bytes, const GroupShape &group) {
  return fastest(c, kind, bytes, group).at(double(bytes));
}

const char *cost::collectiveAlgorithm(const Cluster &c, CollectiveKind kind,
                                      uint64_t bytes, const GroupShape &group) {
  return fastest(c, kind, bytes, group).name;
}
