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

double cost::kernelSeconds(const Cluster &c, uint64_t flops, uint64_t bytes,
                           DType dtype) {
  if (flops == 0 && bytes == 0)
    return 0;
  double compute = double(flops) / gemmRate(c, flops, dtype);
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

std::vector<AffineCost> cost::collectiveAlgorithms(const Cluster &c,
                                                   CollectiveKind kind,
                                                   const GroupShape &group) {
  if (group.ranks <= 1)
    return {AffineCost()};
  double p = double(group.ranks), n = double(group.nodes),
         g = double(group.perNode);
  double bNv = c.nvlinkBytesPerSecond, bNet = c.networkBytesPerSecond;
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
                    2 * intra.secondsPerByte + 2 * inter.secondsPerByte};
    if (!net)
      return {ring};
    // Tree: a chain in the node, a double binary tree between nodes; each
    // share goes up and down the tree once.
    double depth = std::ceil(std::log2(n));
    AffineCost tree{base + 2 * (g - 1) * c.nvlinkLatency +
                        2 * depth * c.treeNetworkLatency,
                    2 * (g - 1) / g / bNv + 2 / g / bNet};
    return {ring, tree};
  }
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
    return {{base + intra.latency + inter.latency,
             intra.secondsPerByte + inter.secondsPerByte}};
  case CollectiveKind::AllToAll: {
    // The bytes for the other GPUs of the node go over NVLink, the rest
    // over the network, at once: the slower of the two.
    double latency =
        base + (p - 1) * (net ? c.networkLatency : c.nvlinkLatency);
    double viaNvlink = (g - 1) / p / bNv, viaNetwork = (p - g) / p / bNet;
    return {{latency, std::max(viaNvlink, viaNetwork)}};
  }
  case CollectiveKind::Broadcast:
    return {{base + (p - 1) * (net ? c.networkLatency : c.nvlinkLatency),
             1 / (net ? bNet : bNv)}};
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
  case CollectiveKind::Permute:
    // One transfer to one peer (a permute: every rank's at once, each link
    // used in one direction by one transfer).
    return {{base + (net ? c.networkLatency : c.nvlinkLatency),
             1 / (net ? bNet : bNv)}};
  case CollectiveKind::None:
  case CollectiveKind::AxisIndex:
    // Nothing moves (an axis index is known locally).
    return {AffineCost()};
  }
  return {AffineCost()};
}

double cost::collectiveSeconds(const Cluster &c, CollectiveKind kind,
                               uint64_t bytes, const GroupShape &group) {
  double best = INFINITY;
  for (const AffineCost &a : collectiveAlgorithms(c, kind, group))
    best = std::min(best, a.at(double(bytes)));
  return best;
}
