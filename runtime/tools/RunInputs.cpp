//===- RunInputs.cpp - what a rank loads before its first step ------------===//

#include "RunInputs.h"

#include "RunData.h"

#include "braid-runtime/HalfFloat.h"
#include "braid-runtime/Npz.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>

using namespace braid;
using namespace braid::rt;

namespace {

/// The rank prepareInputs works for.
int currentRank = 0;

/// The coordinates of flat element `i` of `shape`, as "[a, b]".
std::string positionText(const std::vector<int64_t> &shape, size_t i) {
  std::vector<int64_t> at(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      at[d] = int64_t(i % uint64_t(shape[d]));
      i /= uint64_t(shape[d]);
    }
  }
  std::string s = "[";
  for (size_t d = 0; d < at.size(); ++d)
    s += (d ? ", " : "") + std::to_string(at[d]);
  return s + "]";
}

/// Converts `n` elements between the wide and the narrow type of one kind.
/// An integer that the narrow type cannot hold is an error naming `what`
/// and its position (never wrapped: 2^32 + l must not read as l); floats
/// narrow as PyTorch's .float() does.
template <typename Wide, typename Narrow>
void convertWidth(const NpyArray &array, bool fromWide, bool toWide, size_t n,
                  std::vector<uint8_t> &out, const std::string &what) {
  for (size_t i = 0; i < n; ++i) {
    Wide v = fromWide
                 ? reinterpret_cast<const Wide *>(array.data.data())[i]
                 : Wide(reinterpret_cast<const Narrow *>(array.data.data())[i]);
    if (toWide) {
      reinterpret_cast<Wide *>(out.data())[i] = v;
      continue;
    }
    if constexpr (std::is_integral_v<Narrow>) {
      if (v < Wide(std::numeric_limits<Narrow>::min()) ||
          v > Wide(std::numeric_limits<Narrow>::max()))
        throw NpzError(what + " holds " + std::to_string(v) + " at " +
                       positionText(array.shape, i) +
                       ", which does not fit the plan's " +
                       std::to_string(8 * sizeof(Narrow)) + "-bit integers");
    }
    reinterpret_cast<Narrow *>(out.data())[i] = Narrow(v);
  }
}

/// The bytes of `array` converted to `buffer`'s element type (float widths
/// and integer widths convert; floats and integers do not mix).
std::vector<uint8_t> convert(const NpyArray &array, const Buffer &buffer,
                             const std::string &what) {
  if (isHalf(buffer.dtype)) {
    // Files hold half tensors as f32 (or f64, or f16 for an f16 tensor):
    // f32 first, then rounded to the plan's type.
    Buffer wide = buffer;
    wide.dtype = DType::F32;
    wide.bytes = uint64_t(buffer.numElements()) * sizeof(float);
    std::vector<float> f(size_t(buffer.numElements()));
    if (array.descr == "<f2" && buffer.dtype == DType::F16 &&
        array.data.size() == buffer.bytes)
      return array.data;
    if (array.descr != "<f4" && array.descr != "<f8")
      throw NpzError(what + " has dtype '" + array.descr +
                     "', but the plan holds " + dtypeName(buffer.dtype) +
                     " (stored as float32 in files)");
    std::vector<uint8_t> bytes = convert(array, wide, what);
    std::memcpy(f.data(), bytes.data(), bytes.size());
    std::vector<uint8_t> out(buffer.bytes);
    narrowHalf(buffer.dtype, f.data(), out.data(), buffer.numElements());
    return out;
  }
  std::string want = descrOf(buffer.dtype);
  if (array.descr == want)
    return array.data;
  auto isFloat = [](const std::string &d) { return d == "<f4" || d == "<f8"; };
  auto isInt = [](const std::string &d) { return d == "<i4" || d == "<i8"; };
  size_t n = buffer.numElements();
  std::vector<uint8_t> out(buffer.bytes);
  if (isFloat(array.descr) && isFloat(want)) {
    convertWidth<double, float>(array, array.descr == "<f8", want == "<f8", n,
                                out, what);
    return out;
  }
  if (isInt(array.descr) && isInt(want)) {
    convertWidth<int64_t, int32_t>(array, array.descr == "<i8", want == "<i8",
                                   n, out, what);
    return out;
  }
  throw NpzError(what + " has dtype '" + array.descr +
                 "', but the plan holds " + dtypeName(buffer.dtype));
}

/// indexUse of `buffer`, the buffers already visited left out.
void addIndexUse(const Plan &plan, uint32_t buffer, std::set<uint32_t> &visited,
                 IndexUse &use) {
  if (!visited.insert(buffer).second)
    return;
  for (const Stream &s : plan.streams)
    for (const Instr &i : s.instrs)
      for (size_t k = 0; k < i.operands.size(); ++k) {
        if (i.operands[k] != buffer)
          continue;
        const auto &in = [&](size_t j) -> const Buffer & {
          return plan.buffers[i.operands[j]];
        };
        auto ids = [&](int64_t limit) {
          use.embedding = true;
          use.limit = std::min(use.limit, limit);
        };
        auto labels = [&](int64_t limit) {
          use.loss = true;
          use.limit = std::min(use.limit, limit);
        };
        Opcode op = i.opcode;
        if (op == Opcode::Embedding && k == 1)
          ids(in(0).shape[0]);
        else if (op == Opcode::EmbeddingBackward && k == 1)
          ids(plan.buffers[i.results[0]].shape[0]);
        else if ((op == Opcode::NllLoss || op == Opcode::CrossEntropy) &&
                 k == 1)
          labels(in(0).shape[1]);
        else if ((op == Opcode::NllLossBackward ||
                  op == Opcode::CrossEntropyBackward) &&
                 k == 2)
          labels(in(1).shape[1]);
        // One shard of a table or of the classes: `parts` of them.
        else if (op == Opcode::EmbeddingShard && k == 1)
          ids(in(0).shape[0] * i.as<ops::EmbeddingShardAttrs>().parts);
        else if (op == Opcode::EmbeddingShardBackward && k == 1)
          ids(plan.buffers[i.results[0]].shape[0] *
              i.as<ops::EmbeddingShardBackwardAttrs>().parts);
        else if (op == Opcode::CrossEntropyShardStats && k == 1)
          labels(in(0).shape[1] *
                 i.as<ops::CrossEntropyShardStatsAttrs>().parts);
        else if (op == Opcode::CrossEntropyShardBackward && k == 2)
          labels(in(1).shape[1] * in(3).shape[0]);
        else if (op == Opcode::Reshape || op == Opcode::Transpose ||
                 op == Opcode::Slice || op == Opcode::Broadcast ||
                 op == Opcode::Concat)
          for (uint32_t r : i.results)
            addIndexUse(plan, r, visited, use);
      }
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
  if (b.dtype == DType::F32 || isHalf(b.dtype)) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[i] = dist(rng);
    if (isHalf(b.dtype))
      narrowHalf(b.dtype, x.data(), out.data(), n);
    else
      std::memcpy(out.data(), x.data(), x.size() * sizeof(float));
  } else if (b.dtype == DType::I32 || b.dtype == DType::I64) {
    int64_t limit = indexUse(plan, binding.buffer).limit;
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

/// This rank's piece of `global`, the bytes of the global value of
/// `binding` with elements of `elementBytes` (the whole of it when the
/// binding is not split).
std::vector<uint8_t> pieceOf(const Plan &plan, const Binding &binding,
                             const std::vector<uint8_t> &global,
                             size_t elementBytes) {
  if (binding.splitDim < 0 && binding.dpSplitDim < 0)
    return global;
  RankPlace place = placeRank(plan, currentRank);
  std::vector<uint8_t> piece = global;
  if (binding.splitDim >= 0) {
    piece.assign(global.size() / size_t(place.tpSize), 0);
    copyPiece(global.data(), piece.data(), globalShape(plan, binding),
              elementBytes, binding.splitDim, binding.splitBlocks, place.tpSize,
              place.tpIndex, /*toPiece=*/true);
  }
  if (binding.dpSplitDim < 0)
    return piece;
  // ZeRO: the rank's piece of that, over the data-parallel axis.
  std::vector<uint8_t> shard(piece.size() / size_t(place.shards));
  copyPiece(piece.data(), shard.data(), tensorParallelShape(plan, binding),
            elementBytes, binding.dpSplitDim, {}, place.shards,
            place.shardIndex, /*toPiece=*/true);
  return shard;
}

/// Seeded initial values of a parameter: weights uniform in
/// +-1/sqrt(fan_in), vectors 1 for scales (".weight", "gamma") and 0 for
/// biases; optimizer state zero.
/// Of a tensor-parallel parameter, the global value is initialized (and
/// this rank's piece taken): every tensor-parallel size starts alike.
std::vector<uint8_t> initialize(const Plan &plan, const Binding &binding,
                                uint64_t seed) {
  const Buffer &local = plan.buffers[binding.buffer];
  Buffer b = local;
  b.shape = globalShape(plan, binding);
  // Computed in f32; a half parameter is rounded at the end.
  b.bytes = uint64_t(b.numElements()) * sizeof(float);
  std::vector<uint8_t> out(b.bytes, 0);
  if (binding.role != Role::Parameter ||
      (b.dtype != DType::F32 && !isHalf(b.dtype)))
    return std::vector<uint8_t>(local.bytes, 0);
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
  if (isHalf(b.dtype)) {
    std::vector<uint8_t> half(size_t(n) * dtypeBytes(b.dtype));
    narrowHalf(b.dtype, x, half.data(), n);
    return pieceOf(plan, binding, half, dtypeBytes(b.dtype));
  }
  return pieceOf(plan, binding, out, sizeof(float));
}

} // namespace

std::string braid::rt::shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

IndexUse braid::rt::indexUse(const Plan &plan, uint32_t buffer) {
  IndexUse use;
  std::set<uint32_t> visited;
  addIndexUse(plan, buffer, visited, use);
  return use;
}

std::string braid::rt::descrOf(DType dtype) {
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
  case DType::F16:
  case DType::BF16:
    // numpy has no bf16: files hold half tensors widened to f32.
    return "<f4";
  }
  return "";
}

void braid::rt::collectInputNames(const Plan &plan,
                                  std::set<std::string> &paramNames,
                                  std::set<std::string> &dataNames) {
  paramNames.insert(kStepsDoneName);
  for (const Plan *program : programsOf(plan)) {
    for (const Binding &b : program->arguments)
      (b.role == Role::Batch || b.role == Role::Temporary ? dataNames
                                                          : paramNames)
          .insert(b.name);
    // What --save writes besides the state (the loss, the step's other
    // results) loads back: a saved file resumes the run.
    for (const Binding &b : program->results)
      paramNames.insert(b.name);
  }
}

Inputs braid::rt::prepareInputs(const Plan &plan, const Options &o, int rank,
                                int world,
                                const std::set<std::string> &paramNames,
                                const std::set<std::string> &dataNames) {
  currentRank = rank;
  // The batch is per data-parallel replica: the ranks of a tensor-parallel
  // group read the same one.
  RankPlace place = placeRank(plan, rank);
  rank = int(place.dpIndex);
  world = int(place.dpSize);
  Inputs inputs;
  std::map<std::string, NpyArray> params, data;
  if (!o.params.empty())
    params = readNpz(o.params);
  if (!o.data.empty() && isTokenFile(o.data)) {
    inputs.tokens = std::make_shared<TokenStream>(plan, o, currentRank);
    if (inputs.tokens->filled().empty())
      inputs.tokens.reset();
  } else if (!o.data.empty() && o.data.size() >= 4 &&
             o.data.compare(o.data.size() - 4, 4, ".npy") == 0) {
    // One array: the plan's one batch input (over all its programs).
    std::vector<std::string> names(dataNames.begin(), dataNames.end());
    if (names.size() != 1) {
      std::string list;
      for (const std::string &n : names)
        list += (list.empty() ? "" : ", ") + n;
      throw NpzError(o.data + " holds one array, but the plan has " +
                     std::to_string(names.size()) + " batch inputs (" + list +
                     "): pass a .npz with an array for each");
    }
    data[names.front()] = readNpy(o.data);
  } else if (!o.data.empty()) {
    data = readNpz(o.data);
  }
  if (!o.evalData.empty()) {
    if (plan.evaluation.empty())
      throw NpzError("--eval-data " + o.evalData + ": the plan @" +
                     plan.function +
                     " has no evaluation program (export the step with "
                     "braid.export(..., evaluation=True) or python3 -m "
                     "braid.export --evaluation)");
    inputs.evalTokens = std::make_shared<TokenStream>(
        plan.evaluation.front(), o, currentRank, "--eval-data", o.evalData,
        Sampling::Sequential, o.dataLog.empty() ? "" : o.dataLog + ".eval");
    if (inputs.evalTokens->filled().empty())
      throw NpzError("--eval-data " + o.evalData +
                     ": the evaluation program takes no token ids or labels");
  }
  // A .npz of samples: each batch input's samples, by name.
  int64_t sampleCount = -1;
  std::vector<std::pair<std::string, SampleStream::Input>> sampleInputs;
  for (const Binding &b : plan.arguments) {
    const Buffer &buffer = plan.buffers[b.buffer];
    std::string expected =
        shapeText(buffer.shape) + " " + dtypeName(buffer.dtype);
    if (b.role == Role::Parameter || b.role == Role::OptimizerState) {
      // Files hold global values; a split binding takes its piece.
      std::vector<int64_t> global = globalShape(plan, b);
      expected = shapeText(global) + " " + dtypeName(buffer.dtype);
      auto it = params.find(b.name);
      if (it == params.end()) {
        if (!o.params.empty() && b.role == Role::Parameter)
          throw NpzError(o.params + " has no array '" + b.name +
                         "' (parameter, expected " + expected + ")");
        inputs.state[b.buffer] = initialize(plan, b, o.seed);
        continue;
      }
      if (it->second.shape != global)
        throw NpzError(o.params + ": '" + b.name + "' has shape " +
                       shapeText(it->second.shape) + ", but the plan expects " +
                       expected +
                       (b.splitDim >= 0 || b.dpSplitDim >= 0
                            ? " (the global value; each rank keeps its piece " +
                                  shapeText(buffer.shape) + ")"
                            : ""));
      NpyArray array = it->second;
      if (b.splitDim >= 0 || b.dpSplitDim >= 0) {
        int64_t elements = 1;
        for (int64_t d : global)
          elements *= d;
        size_t elementBytes =
            elements ? array.data.size() / size_t(elements) : 1;
        array.data = pieceOf(plan, b, array.data, elementBytes);
        array.shape = buffer.shape;
      }
      inputs.state[b.buffer] =
          convert(array, buffer, o.params + ": '" + b.name + "'");
      // An optimizer's step count (AdamW's bias correction takes its
      // power; dropout its counter), as the compiler marks it: the steps
      // taken, a whole number that float32 holds exactly. -5 or NaN would
      // train on silently.
      if (b.stepCount && buffer.shape.empty() && buffer.dtype == DType::F32) {
        float count = 0;
        std::memcpy(&count, inputs.state[b.buffer].data(), sizeof(count));
        if (!(count >= 0 && count <= float(1 << 24) &&
              count == std::floor(count)))
          throw NpzError(o.params + ": '" + b.name + "' is " +
                         std::to_string(count) +
                         ", not a step count (a whole number of steps "
                         "taken, 0 to 2^24)");
      }
    } else if (b.role == Role::Hyperparameter) {
      // A schedule: one value a step, written before each step.
      auto it = params.find(b.name);
      if (it == params.end())
        throw NpzError(
            (o.params.empty() ? std::string("no --params file")
                              : o.params + " has no array '" + b.name + "'") +
            ": the plan's hyperparameter '" + b.name +
            "' is scheduled, and --params must hold its schedule (one value "
            "a step, as braid.export writes it)");
      const NpyArray &array = it->second;
      if (array.shape.size() != 1 || array.shape[0] < 1)
        throw NpzError(o.params + ": '" + b.name + "' has shape " +
                       shapeText(array.shape) +
                       ", but a hyperparameter's schedule is one value a step "
                       "(shape (S,), S >= 1)");
      Buffer values = buffer;
      values.shape = array.shape;
      values.bytes = uint64_t(array.shape[0]) * sizeof(float);
      std::vector<uint8_t> bytes =
          convert(array, values, o.params + ": '" + b.name + "'");
      std::vector<float> &schedule = inputs.schedules[b.buffer];
      schedule.resize(size_t(array.shape[0]));
      std::memcpy(schedule.data(), bytes.data(), bytes.size());
      for (size_t i = 0; i < schedule.size(); ++i)
        if (!std::isfinite(schedule[i]))
          throw NpzError(o.params + ": '" + b.name + "' holds " +
                         std::to_string(schedule[i]) + " at step " +
                         std::to_string(i + 1) + " of its schedule");
    } else if (inputs.tokens) {
      // Every batch input is the token file's (TokenStream checks).
    } else if (o.samples &&
               (b.role == Role::Batch || b.role == Role::Temporary)) {
      // All N samples of the input, [N, ...] of its per-row shape.
      auto it = data.find(b.name);
      std::vector<int64_t> rowShape(buffer.shape.begin() +
                                        (buffer.shape.empty() ? 0 : 1),
                                    buffer.shape.end());
      std::string wanted = "[N" + std::string(rowShape.empty() ? "" : ", ");
      for (size_t d = 0; d < rowShape.size(); ++d)
        wanted += (d ? ", " : "") + std::to_string(rowShape[d]);
      wanted += "] " + std::string(dtypeName(buffer.dtype));
      if (it == data.end())
        throw NpzError(o.data + " has no array '" + b.name +
                       "' (batch input; samples " + wanted + ")");
      const NpyArray &array = it->second;
      if (buffer.shape.empty() || array.shape.empty() ||
          std::vector<int64_t>(array.shape.begin() + 1, array.shape.end()) !=
              rowShape)
        throw NpzError(
            o.data + ": '" + b.name + "' has shape " + shapeText(array.shape) +
            ", but the plan's samples are " + wanted + " (a row of its batch " +
            shapeText(buffer.shape) + " each)");
      if (sampleCount >= 0 && array.shape[0] != sampleCount)
        throw NpzError(o.data + ": '" + b.name + "' holds " +
                       std::to_string(array.shape[0]) + " samples, '" +
                       sampleInputs.front().first + "' " +
                       std::to_string(sampleCount));
      sampleCount = array.shape[0];
      Buffer all = buffer;
      all.shape[0] = sampleCount;
      all.bytes =
          buffer.bytes / uint64_t(buffer.shape[0]) * uint64_t(sampleCount);
      sampleInputs.push_back(
          {b.name,
           {b.buffer, convert(array, all, o.data + ": '" + b.name + "'")}});
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
  // The steps a saved run took: the schedules resume there.
  if (auto it = params.find(kStepsDoneName); it != params.end()) {
    const NpyArray &a = it->second;
    int64_t done = -1;
    if (a.shape.empty() && a.descr == "<i8")
      std::memcpy(&done, a.data.data(), sizeof(done));
    else if (a.shape.empty() && a.descr == "<i4") {
      int32_t narrow = 0;
      std::memcpy(&narrow, a.data.data(), sizeof(narrow));
      done = narrow;
    } else
      throw NpzError(o.params + ": '" + kStepsDoneName +
                     "' must be a scalar integer (the steps already taken), "
                     "but has dtype '" +
                     a.descr + "' and shape " + shapeText(a.shape));
    if (done < 0)
      throw NpzError(o.params + ": '" + kStepsDoneName + "' is " +
                     std::to_string(done) + ", not a step count");
    inputs.stepsDone = done;
  }
  inputs.steps = o.resume.empty()
                     ? o.steps
                     : std::max<int64_t>(0, o.steps - inputs.stepsDone);
  if (o.samples) {
    std::vector<SampleStream::Input> streamed;
    for (auto &[name, input] : sampleInputs)
      streamed.push_back(std::move(input));
    inputs.samples = std::make_shared<SampleStream>(
        plan, o, currentRank, sampleCount, std::move(streamed));
  }
  for (const auto &[id, schedule] : inputs.schedules) {
    int64_t last = inputs.stepsDone + inputs.steps;
    if (last > int64_t(schedule.size())) {
      std::string name;
      for (const Binding &b : plan.arguments)
        if (b.buffer == id)
          name = b.name;
      throw NpzError(
          o.params + ": the schedule of '" + name + "' has " +
          std::to_string(schedule.size()) +
          " steps, but this run takes steps " +
          std::to_string(inputs.stepsDone + 1) + " to " + std::to_string(last) +
          " (--steps " + std::to_string(o.steps) +
          (inputs.stepsDone
               ? " after " + std::to_string(inputs.stepsDone) + " steps done"
               : std::string()) +
          "); export a longer schedule (max_steps)");
    }
  }
  // --data as --params: an array the plan has no batch input for is an
  // error, not ignored (a misspelled name would train on synthetic data).
  for (const auto &[name, array] : data)
    if (!dataNames.count(name))
      throw NpzError(o.data + " has '" + name +
                     "', which is not a batch input of the plan (a file for "
                     "another model?)");
  for (const auto &[name, array] : params)
    if (!paramNames.count(name))
      throw NpzError(o.params + " has '" + name +
                     "', which is not a parameter or optimizer state of the "
                     "plan (a file for another model?)");
  return inputs;
}
