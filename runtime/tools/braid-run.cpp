//===- braid-run.cpp - execute a plan: train for K steps ------------------===//
//
//   mpirun -np N braid-run [--backend=cpu|cuda] step.plan --steps K
//       [--params p.npz] [--data d.npz] [--save out.npz] [--seed S]
//       [--timeout SECONDS]
//   braid-run --dump step.plan
//
// Every rank loads the plan, binds parameters, optimizer state and its batch,
// runs the steps and prints (rank 0) the loss averaged over ranks. Errors
// before the first step are agreed on by all ranks, which then exit non-zero
// together; an error during a step (a collective past --timeout, bad data)
// stops every rank through MPI_Abort.
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/BackendRegistry.h"
#include "braid-runtime/Executor.h"
#include "braid-runtime/Npz.h"
#include "braid-runtime/Plan.h"
#include "braid-runtime/SimBackend.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <thread>

using namespace braid;
using namespace braid::rt;

namespace {

struct Options {
  std::string plan, backend = "cpu", params, data, save;
  /// --backend=sim: the cluster, the trace file and how many ranks it shows.
  std::string cluster, trace, report;
  int64_t traceRanks = -1;
  int64_t steps = 1;
  bool stepsGiven = false;
  uint64_t seed = 0;
  double timeout = 60;
  bool dump = false;
  bool checkMemory = false;
  /// Testing aid: "hang:RANK:STEP" or "kill:RANK:STEP".
  std::string fault;
  int faultRank = -1;
  int64_t faultStep = -1;
};

const char *kUsage =
    "usage: mpirun -np N braid-run [--backend=cpu|cuda] PLAN [--steps K]\n"
    "           [--params P.npz] [--data D.npz] [--save OUT.npz] [--seed S]\n"
    "           [--timeout SECONDS] [--check-memory]\n"
    "       braid-run --backend=sim PLAN [--cluster=NAME|FILE.json]\n"
    "           [--trace OUT.json] [--trace-ranks N] [--report OUT.json]\n"
    "       braid-run --dump PLAN\n";

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "braid-run: error: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

Options parseOptions(int argc, char **argv) {
  Options o;
  auto value = [&](int &i, const std::string &arg,
                   const std::string &name) -> std::string {
    if (arg.size() > name.size() && arg[name.size()] == '=')
      return arg.substr(name.size() + 1);
    if (i + 1 >= argc)
      usageError(name + " needs a value");
    return argv[++i];
  };
  auto number = [&](const std::string &text, const std::string &name) {
    try {
      size_t used = 0;
      double v = std::stod(text, &used);
      if (used != text.size())
        throw std::invalid_argument(text);
      return v;
    } catch (const std::exception &) {
      usageError(name + " expects a number, got '" + text + "'");
    }
  };
  // An integer option of at least `least` ("non-negative" or "positive").
  auto integer = [&](int &i, const std::string &arg, const std::string &name,
                     int64_t least) {
    double v = number(value(i, arg, name), name);
    if (v < double(least) || v != std::floor(v))
      usageError(name + " must be a " +
                 (least > 0 ? "positive" : "non-negative") + " integer");
    return int64_t(v);
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto is = [&](const std::string &name) {
      return arg == name || arg.rfind(name + "=", 0) == 0;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--dump") {
      o.dump = true;
    } else if (arg == "--check-memory") {
      o.checkMemory = true;
    } else if (is("--backend")) {
      o.backend = value(i, arg, "--backend");
      std::vector<std::string> known = registeredBackends();
      known.push_back("sim");
      if (std::find(known.begin(), known.end(), o.backend) == known.end()) {
        std::string list;
        for (const std::string &n : known)
          list += (list.empty() ? "" : ", ") + n;
        usageError("unknown backend '" + o.backend + "' (this braid-run has " +
                   list + ")");
      }
    } else if (is("--cluster")) {
      o.cluster = value(i, arg, "--cluster");
    } else if (is("--trace")) {
      o.trace = value(i, arg, "--trace");
    } else if (is("--report")) {
      o.report = value(i, arg, "--report");
    } else if (is("--trace-ranks")) {
      o.traceRanks = integer(i, arg, "--trace-ranks", 1);
    } else if (is("--steps")) {
      o.steps = integer(i, arg, "--steps", 0);
      o.stepsGiven = true;
    } else if (is("--seed")) {
      o.seed = uint64_t(integer(i, arg, "--seed", 0));
    } else if (is("--timeout")) {
      o.timeout = number(value(i, arg, "--timeout"), "--timeout");
      if (!(o.timeout > 0))
        usageError("--timeout must be positive");
    } else if (is("--params")) {
      o.params = value(i, arg, "--params");
    } else if (is("--data")) {
      o.data = value(i, arg, "--data");
    } else if (is("--save")) {
      o.save = value(i, arg, "--save");
    } else if (is("--inject-fault")) {
      o.fault = value(i, arg, "--inject-fault");
      char kind[8] = {0};
      int rank = -1;
      long long step = -1;
      if (std::sscanf(o.fault.c_str(), "%7[a-z]:%d:%lld", kind, &rank, &step) !=
              3 ||
          (std::string(kind) != "hang" && std::string(kind) != "kill"))
        usageError("--inject-fault expects hang:RANK:STEP or kill:RANK:STEP");
      o.fault = kind;
      o.faultRank = rank;
      o.faultStep = step;
    } else if (!arg.empty() && arg[0] == '-') {
      usageError("unknown option '" + arg + "'");
    } else if (o.plan.empty()) {
      o.plan = arg;
    } else {
      usageError("more than one plan file: '" + o.plan + "' and '" + arg + "'");
    }
  }
  if (o.plan.empty())
    usageError("no plan file");
  return o;
}

std::string descrOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::I1:
    return "|b1";
  default:
    return "";
  }
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Converts `n` elements between the wide and the narrow type of one kind.
template <typename Wide, typename Narrow>
void convertWidth(const NpyArray &array, bool fromWide, bool toWide, size_t n,
                  std::vector<uint8_t> &out) {
  for (size_t i = 0; i < n; ++i) {
    Wide v = fromWide
                 ? reinterpret_cast<const Wide *>(array.data.data())[i]
                 : Wide(reinterpret_cast<const Narrow *>(array.data.data())[i]);
    if (toWide)
      reinterpret_cast<Wide *>(out.data())[i] = v;
    else
      reinterpret_cast<Narrow *>(out.data())[i] = Narrow(v);
  }
}

/// The bytes of `array` converted to `buffer`'s element type (float widths
/// and integer widths convert; floats and integers do not mix).
std::vector<uint8_t> convert(const NpyArray &array, const Buffer &buffer,
                             const std::string &what) {
  std::string want = descrOf(buffer.dtype);
  if (array.descr == want)
    return array.data;
  auto isFloat = [](const std::string &d) { return d == "<f4" || d == "<f8"; };
  auto isInt = [](const std::string &d) { return d == "<i4" || d == "<i8"; };
  size_t n = buffer.numElements();
  std::vector<uint8_t> out(buffer.bytes);
  if (isFloat(array.descr) && isFloat(want)) {
    convertWidth<double, float>(array, array.descr == "<f8", want == "<f8", n,
                                out);
    return out;
  }
  if (isInt(array.descr) && isInt(want)) {
    convertWidth<int64_t, int32_t>(array, array.descr == "<i8", want == "<i8",
                                   n, out);
    return out;
  }
  throw NpzError(what + " has dtype '" + array.descr +
                 "', but the plan holds " + dtypeName(buffer.dtype));
}

/// The largest valid index for a batch input that holds indices: the table
/// size of an embedding or the class count of a loss that reads it,
/// following reshapes and other data movement.
int64_t indexLimit(const Plan &plan, uint32_t buffer,
                   std::set<uint32_t> &visited) {
  if (!visited.insert(buffer).second)
    return INT64_MAX;
  int64_t limit = INT64_MAX;
  uint64_t offset = plan.buffers[buffer].offset;
  for (const Stream &s : plan.streams)
    for (const Instr &i : s.instrs)
      for (size_t k = 0; k < i.operands.size(); ++k) {
        if (plan.buffers[i.operands[k]].offset != offset ||
            i.operands[k] != buffer)
          continue;
        const auto &in = [&](size_t j) -> const Buffer & {
          return plan.buffers[i.operands[j]];
        };
        Opcode op = i.opcode;
        if (op == Opcode::Embedding && k == 1)
          limit = std::min(limit, in(0).shape[0]);
        else if (op == Opcode::EmbeddingBackward && k == 1)
          limit = std::min(limit, plan.buffers[i.results[0]].shape[0]);
        else if ((op == Opcode::NllLoss || op == Opcode::CrossEntropy) &&
                 k == 1)
          limit = std::min(limit, in(0).shape[1]);
        else if ((op == Opcode::NllLossBackward ||
                  op == Opcode::CrossEntropyBackward) &&
                 k == 2)
          limit = std::min(limit, in(1).shape[1]);
        else if (op == Opcode::Reshape || op == Opcode::Transpose ||
                 op == Opcode::Slice || op == Opcode::Broadcast ||
                 op == Opcode::Concat)
          for (uint32_t r : i.results)
            limit = std::min(limit, indexLimit(plan, r, visited));
      }
  return limit;
}

/// Fills a batch input with seeded synthetic data.
std::vector<uint8_t> synthesize(const Plan &plan, const Binding &binding,
                                uint64_t seed, int rank) {
  const Buffer &b = plan.buffers[binding.buffer];
  std::seed_seq seq{seed, uint64_t(rank) + 1,
                    uint64_t(std::hash<std::string>()(binding.name))};
  std::mt19937_64 rng(seq);
  std::vector<uint8_t> out(b.bytes);
  int64_t n = b.numElements();
  if (b.dtype == DType::F32) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i)
      reinterpret_cast<float *>(out.data())[i] = dist(rng);
  } else if (b.dtype == DType::I32 || b.dtype == DType::I64) {
    std::set<uint32_t> visited;
    int64_t limit = indexLimit(plan, binding.buffer, visited);
    if (limit == INT64_MAX)
      limit = 2;
    std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(limit, 1) -
                                                       1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = dist(rng);
      if (b.dtype == DType::I32)
        reinterpret_cast<int32_t *>(out.data())[i] = int32_t(v);
      else
        reinterpret_cast<int64_t *>(out.data())[i] = v;
    }
  } else {
    throw PlanError("cannot synthesize batch input '" + binding.name +
                    "' of type " + dtypeName(b.dtype) + "; pass --data");
  }
  return out;
}

/// Seeded initial values of a parameter: weights uniform in
/// +-1/sqrt(fan_in), vectors 1 for scales (".weight", "gamma") and 0 for
/// biases; optimizer state zero.
std::vector<uint8_t> initialize(const Plan &plan, const Binding &binding,
                                uint64_t seed) {
  const Buffer &b = plan.buffers[binding.buffer];
  std::vector<uint8_t> out(b.bytes, 0);
  if (binding.role != Role::Parameter || b.dtype != DType::F32)
    return out;
  float *x = reinterpret_cast<float *>(out.data());
  int64_t n = b.numElements();
  auto endsWith = [&](const std::string &suffix) {
    return binding.name.size() >= suffix.size() &&
           binding.name.compare(binding.name.size() - suffix.size(),
                                suffix.size(), suffix) == 0;
  };
  if (b.shape.size() >= 2) {
    std::seed_seq seq{seed, uint64_t(std::hash<std::string>()(binding.name))};
    std::mt19937_64 rng(seq);
    float bound = 1.0f / std::sqrt(float(std::max<int64_t>(b.shape.back(), 1)));
    std::uniform_real_distribution<float> dist(-bound, bound);
    for (int64_t i = 0; i < n; ++i)
      x[i] = dist(rng);
  } else if (b.shape.size() == 1 &&
             (endsWith(".weight") || endsWith("gamma"))) {
    std::fill(x, x + n, 1.0f);
  }
  return out;
}

/// Everything a rank needs before its first step, on the host.
struct Inputs {
  std::map<uint32_t, std::vector<uint8_t>> state, batch;
};

Inputs prepareInputs(const Plan &plan, const Options &o, int rank, int world) {
  Inputs inputs;
  std::map<std::string, NpyArray> params, data;
  if (!o.params.empty())
    params = readNpz(o.params);
  if (!o.data.empty())
    data = readNpz(o.data);
  std::set<std::string> known;
  for (const Binding &b : plan.arguments) {
    const Buffer &buffer = plan.buffers[b.buffer];
    std::string expected =
        shapeText(buffer.shape) + " " + dtypeName(buffer.dtype);
    if (b.role == Role::Parameter || b.role == Role::OptimizerState) {
      known.insert(b.name);
      auto it = params.find(b.name);
      if (it == params.end()) {
        if (!o.params.empty() && b.role == Role::Parameter)
          throw NpzError(o.params + " has no array '" + b.name +
                         "' (parameter, expected " + expected + ")");
        inputs.state[b.buffer] = initialize(plan, b, o.seed);
        continue;
      }
      if (it->second.shape != buffer.shape)
        throw NpzError(o.params + ": '" + b.name + "' has shape " +
                       shapeText(it->second.shape) + ", but the plan expects " +
                       expected);
      inputs.state[b.buffer] =
          convert(it->second, buffer, o.params + ": '" + b.name + "'");
    } else if (b.role == Role::Batch || b.role == Role::Temporary) {
      auto it = data.find(b.name);
      if (it == data.end()) {
        if (!o.data.empty())
          throw NpzError(o.data + " has no array '" + b.name +
                         "' (batch input, expected " + expected +
                         " per rank, or the global batch along dimension 0)");
        inputs.batch[b.buffer] = synthesize(plan, b, o.seed, rank);
        continue;
      }
      NpyArray array = it->second;
      if (array.shape != buffer.shape) {
        // The global batch: rank r takes the r-th slice along dimension 0.
        std::vector<int64_t> global = buffer.shape;
        if (!global.empty())
          global[0] *= world;
        if (global.empty() || array.shape != global)
          throw NpzError(o.data + ": '" + b.name + "' has shape " +
                         shapeText(array.shape) + ", but the plan expects " +
                         expected + " per rank or " + shapeText(global) +
                         " for all ranks");
        size_t bytesPerRank = array.data.size() / world;
        array.data = std::vector<uint8_t>(
            array.data.begin() + rank * bytesPerRank,
            array.data.begin() + (rank + 1) * bytesPerRank);
        array.shape = buffer.shape;
      }
      inputs.batch[b.buffer] =
          convert(array, buffer, o.data + ": '" + b.name + "'");
    }
  }
  for (const auto &[name, array] : params)
    if (!known.count(name))
      throw NpzError(o.params + " has '" + name +
                     "', which is not a parameter or optimizer state of the "
                     "plan (a file for another model?)");
  return inputs;
}

/// True on every rank if `ok` on every rank.
bool agree(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int fail(int rank, const std::string &message) {
  std::fprintf(stderr, "braid-run: error: rank %d: %s\n", rank,
               message.c_str());
  std::fflush(stderr);
  return 1;
}

/// --backend=sim: one process plays every rank on the cluster; no MPI.
int simulate(const Options &o) {
  if (!o.params.empty() || !o.data.empty() || !o.save.empty() ||
      o.checkMemory || !o.fault.empty())
    usageError("--backend=sim simulates time only: --params, --data, "
               "--save, --check-memory and --inject-fault do not apply");
  if (o.stepsGiven)
    usageError("--backend=sim simulates one step (every step of a plan is "
               "the same); --steps does not apply");
  try {
    // The plan's cluster (braid-compile --cluster), unless told another.
    Plan plan = loadPlanFile(o.plan);
    Cluster cluster;
    std::string error;
    if (!o.cluster.empty()) {
      if (!braid::cost::loadCluster(o.cluster, cluster, error))
        throw std::runtime_error(error);
    } else if (plan.clusterJson.empty()) {
      usageError("the plan records no cluster (it was compiled without "
                 "--cluster): give --cluster=NAME or --cluster=FILE.json");
    } else if (!braid::cost::parseCluster(plan.clusterJson,
                                          "the plan's cluster '" +
                                              plan.cluster + "'",
                                          cluster, error)) {
      throw std::runtime_error(error);
    }
    SimBackend sim(cluster);
    sim.prepare(plan);
    {
      Executor executor(plan, sim);
      executor.runStep();
    }
    std::ofstream trace;
    if (!o.trace.empty()) {
      trace.open(o.trace);
      if (!trace)
        throw std::runtime_error("cannot write trace file '" + o.trace + "'");
    }
    SimReport report =
        sim.simulate(o.trace.empty() ? nullptr : &trace, o.traceRanks);
    printSimReport(std::cout, report, cluster);
    if (!o.report.empty()) {
      std::ofstream out(o.report);
      writeSimReportJson(out, report, cluster);
      out.close();
      if (!out)
        throw std::runtime_error("cannot write report file '" + o.report + "'");
    }
    if (!o.trace.empty()) {
      trace.close();
      if (!trace)
        throw std::runtime_error("writing trace file '" + o.trace + "' failed");
      std::cout << "trace: " << o.trace << "\n";
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "braid-run: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

int main(int argc, char **argv) {
  registerBuiltinBackends();
  Options o = parseOptions(argc, argv);
  if (o.dump) {
    try {
      std::cout << dumpPlan(loadPlanFile(o.plan));
      return 0;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "braid-run: error: %s\n", e.what());
      return 1;
    }
  }

  if (o.backend == "sim")
    return simulate(o);
  if (!o.cluster.empty() || !o.trace.empty() || o.traceRanks >= 0 ||
      !o.report.empty())
    usageError("--cluster, --trace, --trace-ranks and --report go with "
               "--backend=sim");

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, world = 1, localRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // The rank's index on its node (a collective call, before anything can
  // fail on one rank alone); the cuda backend picks its GPU with it.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &node);
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_free(&node);
  if (provided < MPI_THREAD_MULTIPLE) {
    int code = fail(rank, "the MPI library does not provide "
                          "MPI_THREAD_MULTIPLE, which the streams need");
    MPI_Finalize();
    return code;
  }

  // Load and check everything; all ranks agree before any collective.
  Plan plan;
  Inputs inputs;
  std::unique_ptr<Backend> backend;
  std::string error;
  // Setup runs in phases, each ending with all ranks agreeing that it went
  // well, so that a rank never waits in a collective call for a rank that
  // failed. Loading, constructing and preparing are local; connect() makes
  // the communicators. (The cpu backend's constructor duplicates the world
  // communicator, which every rank that starts the phase reaches.)
  auto phase = [&](const std::function<void()> &work) {
    try {
      work();
    } catch (const std::exception &e) {
      error = e.what();
    }
    if (agree(error.empty()))
      return true;
    if (error.empty())
      error = "stopping: another rank failed to start";
    return false;
  };
  bool ready = phase([&] {
                 plan = loadPlanFile(o.plan);
                 if (plan.worldSize != uint32_t(world))
                   throw PlanError(o.plan + " was compiled for " +
                                   std::to_string(plan.worldSize) +
                                   " ranks, but runs on " +
                                   std::to_string(world) + " (mpirun -np " +
                                   std::to_string(plan.worldSize) + ")");
                 inputs = prepareInputs(plan, o, rank, world);
               }) &&
               phase([&] {
                 BackendOptions options;
                 options.timeoutSeconds = o.timeout;
                 options.localRank = localRank;
                 options.checkMemory = o.checkMemory;
                 backend = createBackend(o.backend, options);
                 backend->prepare(plan);
                 for (auto &[id, bytes] : inputs.state)
                   backend->write(plan.buffers[id], bytes.data());
               }) &&
               phase([&] { backend->connect(); });
  if (!ready) {
    int code = fail(rank, error);
    backend.reset();
    MPI_Finalize();
    return code;
  }

  // Results that carry state to the next step, by role and name.
  std::vector<std::pair<uint32_t, uint32_t>> carry; // (argument, result)
  int loss = -1;
  for (const Binding &r : plan.results) {
    if (r.role == Role::Loss && loss < 0)
      loss = int(r.buffer);
    if (r.role != Role::Parameter && r.role != Role::OptimizerState)
      continue;
    for (const Binding &a : plan.arguments)
      if (a.role == r.role && a.name == r.name)
        carry.push_back({a.buffer, r.buffer});
  }

  MPI_Comm lossComm;
  MPI_Comm_dup(MPI_COMM_WORLD, &lossComm);
  {
    Executor executor(plan, *backend);
    using Clock = std::chrono::steady_clock;
    double firstMs = 0, restMs = 0;
    for (int64_t step = 1; step <= o.steps; ++step) {
      Clock::time_point start = Clock::now();
      if (step == o.faultStep && rank == o.faultRank) {
        if (o.fault == "hang")
          for (;;)
            std::this_thread::sleep_for(std::chrono::seconds(1));
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          std::raise(SIGKILL);
        }).detach();
      }
      try {
        for (auto &[id, bytes] : inputs.batch)
          backend->write(plan.buffers[id], bytes.data());
        executor.runStep();
        // A no-op where the update was made in place.
        for (auto [arg, res] : carry)
          backend->copy(plan.buffers[arg], plan.buffers[res]);
      } catch (const std::exception &e) {
        fail(rank, "step " + std::to_string(step) + ": " + e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
      }
      if (loss >= 0) {
        float local = 0, sum = 0;
        backend->read(plan.buffers[loss], &local);
        MPI_Allreduce(&local, &sum, 1, MPI_FLOAT, MPI_SUM, lossComm);
        if (rank == 0) {
          std::printf("step %lld/%lld loss %.6f\n", (long long)step,
                      (long long)o.steps, sum / world);
          std::fflush(stdout);
        }
      }
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      (step == 1 ? firstMs : restMs) += ms;
    }
    // Rank 0's wall time per step; the first step (warm-up: cuBLAS and NCCL
    // set themselves up) apart.
    if (rank == 0 && o.steps > 0) {
      if (o.steps > 1)
        std::printf("time: first step %.3f ms, then %.3f ms per step\n",
                    firstMs, restMs / double(o.steps - 1));
      else
        std::printf("time: first step %.3f ms\n", firstMs);
      std::fflush(stdout);
    }
  }
  MPI_Comm_free(&lossComm);

  if (!o.save.empty() && rank == 0) {
    try {
      std::map<std::string, NpyArray> out;
      auto save = [&](const Binding &b) {
        const Buffer &buffer = plan.buffers[b.buffer];
        NpyArray &array = out[b.name];
        array.descr = descrOf(buffer.dtype);
        array.shape = buffer.shape;
        array.data.resize(buffer.bytes);
        backend->read(buffer, array.data.data());
      };
      auto isState = [](const Binding &b) {
        return b.role == Role::Parameter || b.role == Role::OptimizerState;
      };
      for (const Binding &b : plan.arguments)
        if (isState(b))
          save(b);
      // The other results of the last step (the loss, unnamed results).
      for (const Binding &b : plan.results)
        if (!isState(b) && !out.count(b.name))
          save(b);
      writeNpz(o.save, out);
    } catch (const std::exception &e) {
      fail(rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  backend.reset();
  MPI_Finalize();
  return 0;
}
