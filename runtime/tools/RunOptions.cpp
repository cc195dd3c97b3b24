//===- RunOptions.cpp - braid-run's command line --------------------------===//

#include "RunOptions.h"

#include "RunData.h"

#include "braid-runtime/BackendRegistry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sched.h>
#include <thread>
#include <vector>

using namespace braid;
using namespace braid::rt;

const char *const braid::rt::kUsage =
    "usage: mpirun -np N braid-run [--backend=cpu|cuda] PLAN [--steps K]\n"
    "           [--params P.npz] [--data D.npz|TOKENS.bin] [--save OUT.npz]\n"
    "           [--seed S] [--token-bytes 2|4] [--sampling random|sequential]\n"
    "           (with SAMPLES.npz: its samples in epochs)\n"
    "           [--data-log PREFIX] [--checkpoint-dir DIR [--save-every N]\n"
    "           [--keep-checkpoints K]] [--resume DIR] [--log-every N]\n"
    "           [--metrics FILE.jsonl] [--eval-data TOKENS.bin\n"
    "           [--eval-every N] [--eval-batches K]]\n"
    "           [--timeout SECONDS] [--threads T] [--check-memory] "
    "[--profile]\n"
    "       braid-run --backend=sim PLAN [--cluster=NAME|FILE.json]\n"
    "           [--trace OUT.json] [--trace-ranks N] [--report OUT.json]\n"
    "       braid-run --dump PLAN\n";

namespace {
constexpr int64_t kMaxSteps = 1000000000000; // 10^12
constexpr int64_t kMaxSeed = 4294967295;     // 2^32 - 1
constexpr int64_t kMaxTraceRanks = 1 << 20;
constexpr int64_t kMaxThreads = 1024;
constexpr double kMaxTimeoutSeconds = 1e9; // 31 years
} // namespace

void braid::rt::usageError(const std::string &message) {
  std::fprintf(stderr, "braid-run: error: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

Options braid::rt::parseOptions(int argc, char **argv) {
  Options o;
  auto value = [&](int &i, const std::string &arg,
                   const std::string &name) -> std::string {
    if (arg.size() > name.size() && arg[name.size()] == '=')
      return arg.substr(name.size() + 1);
    if (i + 1 >= argc)
      usageError(name + " needs a value");
    return argv[++i];
  };
  // A decimal number: std::stod alone would also take hexadecimal
  // ("0x10" is 16), "inf" and "nan".
  auto number = [&](const std::string &text, const std::string &name) {
    static const std::regex decimal(
        R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
    try {
      if (!std::regex_match(text, decimal))
        throw std::invalid_argument(text);
      size_t used = 0;
      double v = std::stod(text, &used);
      if (used != text.size())
        throw std::invalid_argument(text);
      return v;
    } catch (const std::exception &) {
      usageError(name + " expects a decimal number, got '" + text + "'");
    }
  };
  // An integer option of at least `least` ("non-negative" or "positive")
  // and at most `most`: checked before any conversion, so that 1e20 or inf
  // is an error, not an overflow.
  auto integer = [&](int &i, const std::string &arg, const std::string &name,
                     int64_t least, int64_t most) {
    std::string text = value(i, arg, name);
    double v = number(text, name);
    if (!std::isfinite(v) || v < double(least) || v != std::floor(v))
      usageError(name + " must be a " +
                 (least > 0 ? "positive" : "non-negative") + " integer");
    if (v > double(most))
      usageError(name + " must be at most " + std::to_string(most) +
                 ", but is " + text);
    // Digits only: "1e1" or "+5" is a number, but not how a count is
    // written.
    if (text.find_first_not_of("0123456789") != std::string::npos)
      usageError(name + " expects a decimal integer, got '" + text + "'");
    return int64_t(v);
  };
  bool tokenBytesGiven = false, samplingGiven = false, keepGiven = false,
       evalGiven = false;
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
    } else if (arg == "--profile") {
      o.profile = true;
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
      o.traceRanks = integer(i, arg, "--trace-ranks", 1, kMaxTraceRanks);
    } else if (is("--steps")) {
      o.steps = integer(i, arg, "--steps", 0, kMaxSteps);
      o.stepsGiven = true;
    } else if (is("--threads")) {
      o.threads = integer(i, arg, "--threads", 1, kMaxThreads);
    } else if (is("--seed")) {
      // The generator takes 32 bits: a larger seed would alias a smaller.
      o.seed = uint64_t(integer(i, arg, "--seed", 0, kMaxSeed));
    } else if (is("--timeout")) {
      o.timeout = number(value(i, arg, "--timeout"), "--timeout");
      if (!(o.timeout > 0))
        usageError("--timeout must be positive");
      // Beyond this the deadline arithmetic (nanoseconds in 64 bits) would
      // overflow and every collective time out at once.
      if (!(o.timeout <= kMaxTimeoutSeconds))
        usageError("--timeout must be at most " +
                   std::to_string(int64_t(kMaxTimeoutSeconds)) + " seconds");
    } else if (is("--params")) {
      o.params = value(i, arg, "--params");
      if (o.params.empty())
        usageError("--params needs a file name, but is empty");
    } else if (is("--data")) {
      o.data = value(i, arg, "--data");
      if (o.data.empty())
        usageError("--data needs a file name, but is empty");
    } else if (is("--token-bytes")) {
      std::string text = value(i, arg, "--token-bytes");
      if (text != "2" && text != "4")
        usageError("--token-bytes is 2 (uint16) or 4 (uint32), not '" + text +
                   "'");
      o.tokenBytes = text == "2" ? 2 : 4;
      tokenBytesGiven = true;
    } else if (is("--sampling")) {
      std::string text = value(i, arg, "--sampling");
      if (text != "random" && text != "sequential")
        usageError("--sampling is random or sequential, not '" + text + "'");
      o.sampling = text == "random" ? Sampling::Random : Sampling::Sequential;
      samplingGiven = true;
    } else if (is("--data-log")) {
      o.dataLog = value(i, arg, "--data-log");
      if (o.dataLog.empty())
        usageError("--data-log needs a file name prefix, but is empty");
    } else if (is("--eval-data")) {
      o.evalData = value(i, arg, "--eval-data");
      if (o.evalData.empty())
        usageError("--eval-data needs a file name, but is empty");
    } else if (is("--eval-every")) {
      o.evalEvery = integer(i, arg, "--eval-every", 1, kMaxSteps);
      evalGiven = true;
    } else if (is("--eval-batches")) {
      o.evalBatches = integer(i, arg, "--eval-batches", 1, kMaxSteps);
      evalGiven = true;
    } else if (is("--checkpoint-dir")) {
      o.checkpointDir = value(i, arg, "--checkpoint-dir");
      if (o.checkpointDir.empty())
        usageError("--checkpoint-dir needs a folder, but is empty");
    } else if (is("--save-every")) {
      o.saveEvery = integer(i, arg, "--save-every", 1, kMaxSteps);
    } else if (is("--keep-checkpoints")) {
      o.keepCheckpoints = integer(i, arg, "--keep-checkpoints", 1, kMaxSteps);
      keepGiven = true;
    } else if (is("--log-every")) {
      o.logEvery = integer(i, arg, "--log-every", 1, kMaxSteps);
    } else if (is("--metrics")) {
      o.metrics = value(i, arg, "--metrics");
      if (o.metrics.empty())
        usageError("--metrics needs a file name, but is empty");
    } else if (is("--resume")) {
      o.resume = value(i, arg, "--resume");
      if (o.resume.empty())
        usageError("--resume needs a folder, but is empty");
    } else if (is("--save")) {
      o.save = value(i, arg, "--save");
      if (o.save.empty())
        usageError("--save needs a file name, but is empty");
    } else if (is("--inject-fault")) {
      o.fault = value(i, arg, "--inject-fault");
      char kind[8] = {0}, when[24] = {0};
      int rank = -1;
      long long step = -1;
      char *end = nullptr;
      if (std::sscanf(o.fault.c_str(), "%7[a-z]:%d:%23s", kind, &rank, when) !=
              3 ||
          (std::string(kind) != "hang" && std::string(kind) != "kill") ||
          (std::string(when) != "end" &&
           ((step = std::strtoll(when, &end, 10)), *end != '\0')))
        usageError("--inject-fault expects hang:RANK:STEP, kill:RANK:STEP, "
                   "hang:RANK:end or kill:RANK:end");
      o.fault = kind;
      o.faultRank = rank;
      o.faultAtEnd = std::string(when) == "end";
      o.faultStep = o.faultAtEnd ? 0 : step;
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
  if ((o.saveEvery || keepGiven) && o.checkpointDir.empty())
    usageError("--save-every and --keep-checkpoints go with --checkpoint-dir");
  if (tokenBytesGiven && (o.data.empty() || !isTokenFile(o.data)))
    usageError("--token-bytes goes with a token file as --data");
  if ((samplingGiven || !o.dataLog.empty()) && o.data.empty())
    usageError("--sampling and --data-log go with --data (a token file, or "
               "a .npz of samples)");
  // A .npz with --sampling is a dataset of samples; without, one batch.
  o.samples = samplingGiven && !isTokenFile(o.data);
  if (!o.dataLog.empty() && !isTokenFile(o.data) && !o.samples)
    usageError("--data-log goes with a token file or a .npz of samples "
               "(--sampling), not a batch .npz");
  if (evalGiven && o.evalData.empty())
    usageError("--eval-every and --eval-batches go with --eval-data");
  if (!o.evalData.empty() && !isTokenFile(o.evalData))
    usageError("--eval-data takes a token file (held-out tokens as --data "
               "takes them), not '" +
               o.evalData + "'");
  return o;
}

int braid::rt::defaultThreads(int localRanks) {
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  int allowed = cores;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    allowed = std::max(1, CPU_COUNT(&mask));
  if (allowed < cores)
    return allowed;
  return std::max(1, cores / std::max(1, localRanks));
}

int braid::rt::launcherLocalRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *v = std::getenv(name))
      return std::max(1, std::atoi(v));
  return 1;
}
