//===- CudaReductions.cu - row-wise kernels and reductions ----------------===//
//
// The kernels that combine many elements into one: softmax and its
// backward, layer norm and its backward, the losses, reduce_sum/mean, the
// embedding backward and sum_squares. Each is block-parallel, with FP32
// arithmetic and FP32 accumulation (as PyTorch's CUDA kernels for f32):
//
// - a row's reduction is one block of kRowThreads threads (forEachRow and
//   blockSum/blockMax), so a row of 768 or 50257 columns keeps 256 threads
//   busy instead of one;
// - a reduction over rows for each column (layer norm's weight gradients,
//   a bias gradient's reduce_sum) is two kernels: blocks of 32 columns x a
//   chunk of rows write partial sums, then each column adds its chunks in
//   order (columnSums);
// - the losses write each row's loss, then one block adds them in order;
// - the embedding backward sorts the token ids (CUB's stable radix sort),
//   then one block per distinct id adds its tokens' gradient rows in token
//   order.
//
// No atomics on floats: every sum is added in one fixed order, so a kernel
// gives the same bits from run to run. No FP64 either: the build compiles
// this file to PTX as well (braid-runtime-cuda-ptx), and cuda-ptx.py
// checks that it has no f64 instruction.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.cuh"
#include "CudaKernels.h"

#include "braid-runtime/Executor.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

using namespace braid;
using namespace braid::rt;

namespace {

void check(cudaError_t error, const Instr &instr) {
  if (error != cudaSuccess)
    throw KernelError(instr.describe() + ": " + cudaGetErrorString(error));
}

/// Device memory for one kernel's intermediate values, allocated and freed
/// in `stream`'s order (the kernels that use it are enqueued between).
class Scratch {
public:
  Scratch(cudaStream_t stream, const Instr &instr)
      : stream(stream), instr(instr) {}
  ~Scratch() {
    for (void *p : blocks)
      cudaFreeAsync(p, stream);
  }
  template <typename T> T *get(int64_t count) {
    void *p = nullptr;
    check(
        cudaMallocAsync(&p, size_t(count > 0 ? count : 1) * sizeof(T), stream),
        instr);
    blocks.push_back(p);
    return static_cast<T *>(p);
  }
  template <typename T> T *zeroed(int64_t count) {
    T *p = get<T>(count);
    check(cudaMemsetAsync(p, 0, size_t(count > 0 ? count : 1) * sizeof(T),
                          stream),
          instr);
    return p;
  }

private:
  cudaStream_t stream;
  const Instr &instr;
  std::vector<void *> blocks;
};

constexpr int kColumnTile = 32, kRowLanes = 8;

template <typename V>
__global__ void __launch_bounds__(kColumnTile *kRowLanes)
    columnPartialsKernel(int64_t rows, int64_t cols, int64_t perChunk,
                         float2 *partial, V value) {
  __shared__ float2 lanes[kRowLanes][kColumnTile];
  int64_t c = int64_t(blockIdx.x) * kColumnTile + threadIdx.x;
  int64_t begin = int64_t(blockIdx.y) * perChunk;
  int64_t end = begin + perChunk < rows ? begin + perChunk : rows;
  float2 sum = make_float2(0.0f, 0.0f);
  if (c < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float2 v = value(r, c);
      sum.x += v.x;
      sum.y += v.y;
    }
  lanes[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int l = 1; l < kRowLanes; ++l) {
      sum.x += lanes[l][threadIdx.x].x;
      sum.y += lanes[l][threadIdx.x].y;
    }
    partial[int64_t(blockIdx.y) * cols + c] = sum;
  }
}

template <typename W>
__global__ void columnFinishKernel(int64_t cols, int64_t chunks,
                                   const float2 *partial, W write) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
       c += int64_t(blockDim.x) * gridDim.x) {
    float2 sum = make_float2(0.0f, 0.0f);
    for (int64_t k = 0; k < chunks; ++k) {
      sum.x += partial[k * cols + c].x;
      sum.y += partial[k * cols + c].y;
    }
    write(c, sum);
  }
}

/// For each of `cols` columns, the sums over `rows` rows of the two values
/// `value(r, c)` returns (a float2), passed to `write(c, sums)`.
template <typename V, typename W>
void columnSums(int64_t rows, int64_t cols, cudaStream_t stream,
                Scratch &scratch, V value, W write) {
  if (cols <= 0)
    return;
  int64_t chunks = (rows + 255) / 256;
  chunks = chunks < 1 ? 1 : chunks > 64 ? 64 : chunks;
  int64_t perChunk = rows ? (rows + chunks - 1) / chunks : 0;
  float2 *partial = scratch.get<float2>(chunks * cols);
  dim3 grid(unsigned((cols + kColumnTile - 1) / kColumnTile), unsigned(chunks));
  dim3 block(kColumnTile, kRowLanes);
  columnPartialsKernel<<<grid, block, 0, stream>>>(rows, cols, perChunk,
                                                   partial, value);
  int64_t blocks = (cols + 255) / 256;
  columnFinishKernel<<<unsigned(blocks < 65535 ? blocks : 65535), 256, 0,
                       stream>>>(cols, chunks, partial, write);
}

/// Adds the `rows` per-row losses (and counts of rows taken) into `y`: the
/// mean over the rows taken (NaN for none, as torch) or the sum.
void finishLoss(float *y, const float *loss, const float *taken, int64_t rows,
                bool mean, cudaStream_t stream) {
  forEachRow(1, stream, [=] __device__(int64_t) {
    float total = 0.0f, count = 0.0f;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      total += loss[r];
      count += taken[r];
    }
    total = blockSum(total);
    count = blockSum(count);
    if (threadIdx.x == 0)
      y[0] = !mean ? total : count > 0.0f ? total / count : NAN;
  });
}

/// How many of the `rows` labels a loss takes (all but its ignore_index),
/// into `*count`: a backward's divisor.
void countLabels(float *count, int64_t rows, const uint8_t *labels, bool wide,
                 bool ignores, int64_t ignore, cudaStream_t stream) {
  forEachRow(1, stream, [=] __device__(int64_t) {
    float n = 0.0f;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
      n += !ignores || loadIndex(labels, wide, r) != ignore ? 1.0f : 0.0f;
    n = blockSum(n);
    if (threadIdx.x == 0)
      *count = n;
  });
}

/// The embedding backward: y[id] = sum of g[t] over the tokens t whose id
/// (shifted to this shard's rows, for a shard) is id, in token order. Ids
/// outside the table (or the shard's rows) are skipped, and so is the
/// table's padding row `padding` (-1: none); invalid ids set the error
/// flag (`shard`: the id must name some shard, `index` a shard).
void embeddingBackward(const float *g, const uint8_t *ids, bool wide,
                       int64_t count, int64_t vocab, int64_t dim, float *y,
                       uint64_t yBytes, bool shard, int64_t parts,
                       const int64_t *index, int64_t padding, int *flag,
                       cudaStream_t stream, Scratch &scratch,
                       const Instr &instr) {
  check(cudaMemsetAsync(y, 0, yBytes, stream), instr);
  if (count <= 0 || dim <= 0)
    return;
  int n = int(count);
  uint32_t *keys = scratch.get<uint32_t>(count),
           *sortedKeys = scratch.get<uint32_t>(count),
           *unique = scratch.get<uint32_t>(count);
  int32_t *tokens = scratch.get<int32_t>(count),
          *sortedTokens = scratch.get<int32_t>(count),
          *runs = scratch.zeroed<int32_t>(count),
          *starts = scratch.get<int32_t>(count),
          *numRuns = scratch.zeroed<int32_t>(1);
  uint32_t outside = uint32_t(vocab); // sorts after every row of the table
  forEach(count, stream, [=] __device__(int64_t t) {
    int64_t id = loadIndex(ids, wide, t);
    bool valid =
        shard ? validShardId(id, vocab, parts, *index) : id >= 0 && id < vocab;
    if (!valid)
      atomicExch(flag, 1);
    valid &= id != padding;
    if (shard && valid)
      id -= *index * vocab;
    keys[t] = valid && id >= 0 && id < vocab ? uint32_t(id) : outside;
    tokens[t] = int32_t(t);
  });
  int bits = 1;
  while (bits < 32 && (uint64_t(1) << bits) <= uint64_t(outside))
    ++bits;
  size_t sortBytes = 0, encodeBytes = 0, scanBytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, keys, sortedKeys, tokens,
                                  sortedTokens, n, 0, bits, stream);
  cub::DeviceRunLengthEncode::Encode(nullptr, encodeBytes, sortedKeys, unique,
                                     runs, numRuns, n, stream);
  cub::DeviceScan::ExclusiveSum(nullptr, scanBytes, runs, starts, n, stream);
  size_t tempBytes = std::max(sortBytes, std::max(encodeBytes, scanBytes));
  uint8_t *temp = scratch.get<uint8_t>(int64_t(tempBytes));
  // The radix sort is stable: a run's tokens stay in token order.
  check(cub::DeviceRadixSort::SortPairs(temp, sortBytes, keys, sortedKeys,
                                        tokens, sortedTokens, n, 0, bits,
                                        stream),
        instr);
  check(cub::DeviceRunLengthEncode::Encode(temp, encodeBytes, sortedKeys,
                                           unique, runs, numRuns, n, stream),
        instr);
  check(cub::DeviceScan::ExclusiveSum(temp, scanBytes, runs, starts, n, stream),
        instr);
  forEachRow(count, stream, [=] __device__(int64_t b) {
    if (b >= *numRuns || unique[b] == outside)
      return;
    float *row = y + int64_t(unique[b]) * dim;
    int32_t first = starts[b], end = starts[b] + runs[b];
    for (int64_t k = threadIdx.x; k < dim; k += blockDim.x) {
      float sum = 0.0f;
      for (int32_t j = first; j < end; ++j)
        sum += g[int64_t(sortedTokens[j]) * dim + k];
      row[k] = sum;
    }
  });
}

/// Row `r`'s log-sum-exp over every shard's (max, sum) in `stats` [parts,
/// rows, 3], and its target logit (the one shard that holds the label gave
/// it; the others 0).
__device__ void combineShards(const float *stats, int64_t parts, int64_t rows,
                              int64_t r, float &mx, float &sum, float &target) {
  mx = -INFINITY;
  sum = target = 0.0f;
  for (int64_t p = 0; p < parts; ++p)
    mx = fmaxf(mx, stats[3 * (p * rows + r)]);
  for (int64_t p = 0; p < parts; ++p) {
    const float *s = stats + 3 * (p * rows + r);
    sum += s[1] * expf(s[0] - mx);
    target += s[2];
  }
}

} // namespace

void braid::rt::launchReductionKernel(const Plan &plan, const Instr &instr,
                                      uint8_t *arena, cudaStream_t stream,
                                      int *errorFlag) {
  const CudaArgs args{plan, instr, arena};
  const Opcode op = instr.opcode;
  int64_t n = instr.results.empty() ? 0 : args.outBuf(0).numElements();
  int *flag = errorFlag;
  Scratch scratch(stream, instr);

  switch (op) {
  case Opcode::ReduceSum:
  case Opcode::ReduceMean: {
    const Buffer &x = args.inBuf(0);
    std::vector<bool> reduced(x.shape.size(), false);
    bool mean = op == Opcode::ReduceMean;
    for (int64_t d : mean ? instr.as<ops::ReduceMeanAttrs>().dims
                          : instr.as<ops::ReduceSumAttrs>().dims)
      reduced[d] = true;
    std::vector<int64_t> strides = stridesOf(x.shape), keptShape, keptStrides,
                         redShape, redStrides;
    size_t leading = 0; // how many dimensions from the first are reduced
    while (leading < reduced.size() && reduced[leading])
      ++leading;
    bool prefix = true;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      (reduced[d] ? redShape : keptShape).push_back(x.shape[d]);
      (reduced[d] ? redStrides : keptStrides).push_back(strides[d]);
      prefix &= !reduced[d] || d < leading;
    }
    int64_t count = product(redShape, 0, redShape.size());
    float divisor = mean && count ? float(count) : 1.0f;
    const float *src = args.in(0);
    float *y = args.out(0);
    if (prefix) {
      // Over the leading dimensions (a bias gradient): a column sum of a
      // [count, n] matrix.
      columnSums(
          count, n, stream, scratch,
          [=] __device__(int64_t r, int64_t c) {
            return make_float2(src[r * n + c], 0.0f);
          },
          [=] __device__(int64_t c, float2 s) { y[c] = s.x / divisor; });
      return;
    }
    Dims ks = toDims(keptShape, instr), kst = toDims(keptStrides, instr),
         rs = toDims(redShape, instr), rst = toDims(redStrides, instr);
    forEachRow(n, stream, [=] __device__(int64_t o) {
      int64_t rest = o, base = 0;
      for (int k = ks.rank - 1; k >= 0; --k) {
        base += (rest % ks.d[k]) * kst.d[k];
        rest /= ks.d[k];
      }
      float sum = 0.0f;
      for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
        int64_t rr = r, at = base;
        for (int k = rs.rank - 1; k >= 0; --k) {
          at += (rr % rs.d[k]) * rst.d[k];
          rr /= rs.d[k];
        }
        sum += src[at];
      }
      sum = blockSum(sum);
      if (threadIdx.x == 0)
        y[o] = sum / divisor;
    });
    return;
  }
  case Opcode::Softmax:
  case Opcode::LogSoftmax:
  case Opcode::SoftmaxBackward:
  case Opcode::LogSoftmaxBackward: {
    const auto &shape = args.inBuf(0).shape;
    bool log = op == Opcode::LogSoftmax || op == Opcode::LogSoftmaxBackward;
    bool backward =
        op == Opcode::SoftmaxBackward || op == Opcode::LogSoftmaxBackward;
    int64_t dim = op == Opcode::Softmax ? instr.as<ops::SoftmaxAttrs>().dim
                  : op == Opcode::LogSoftmax
                      ? instr.as<ops::LogSoftmaxAttrs>().dim
                  : op == Opcode::SoftmaxBackward
                      ? instr.as<ops::SoftmaxBackwardAttrs>().dim
                      : instr.as<ops::LogSoftmaxBackwardAttrs>().dim;
    int64_t outer = product(shape, 0, dim), size = shape[dim],
            inner = product(shape, dim + 1, shape.size());
    const float *a = args.in(0), *b = backward ? args.in(1) : nullptr;
    float *y = args.out(0);
    bool safe = op == Opcode::Softmax && instr.as<ops::SoftmaxAttrs>().safe;
    // The scale and causal mask braid-fuse-kernels folds in (a causal
    // softmax runs along the last dimension: inner is 1).
    double factor = op == Opcode::Softmax ? instr.as<ops::SoftmaxAttrs>().scale
                    : op == Opcode::SoftmaxBackward
                        ? instr.as<ops::SoftmaxBackwardAttrs>().scale
                        : 1.0;
    bool scaled = factor != 1.0;
    float scale = float(factor);
    bool causal = op == Opcode::Softmax ? instr.as<ops::SoftmaxAttrs>().causal
                  : op == Opcode::SoftmaxBackward
                      ? instr.as<ops::SoftmaxBackwardAttrs>().causal
                      : false;
    forEachRow(outer * inner, stream, [=] __device__(int64_t t) {
      int64_t base = (t / inner) * size * inner + t % inner;
      int64_t keep = causal ? t % size + 1 : size;
      if (!backward) {
        // Entry k of the row as braid.scale and braid.causal_mask give it.
        auto score = [&](int64_t k) {
          float v = a[base + k * inner];
          return k >= keep ? -INFINITY : scaled ? v * scale : v;
        };
        float mx = -INFINITY;
        for (int64_t k = threadIdx.x; k < size; k += blockDim.x)
          mx = fmaxf(mx, score(k));
        mx = blockMax(mx);
        if (safe && mx == -INFINITY) { // every entry masked: 0, not NaN
          for (int64_t k = threadIdx.x; k < size; k += blockDim.x)
            y[base + k * inner] = 0.0f;
          return;
        }
        float sum = 0.0f;
        for (int64_t k = threadIdx.x; k < size; k += blockDim.x)
          sum += expf(score(k) - mx);
        sum = blockSum(sum);
        float logSum = logf(sum);
        for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
          int64_t at = base + k * inner;
          y[at] = log ? score(k) - mx - logSum : expf(score(k) - mx) / sum;
        }
        return;
      }
      float sum = 0.0f;
      for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
        int64_t at = base + k * inner;
        sum += log ? a[at] : a[at] * b[at];
      }
      sum = blockSum(sum);
      for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
        int64_t at = base + k * inner;
        float v = k >= keep ? 0.0f
                  : log     ? a[at] - expf(b[at]) * sum
                            : b[at] * (a[at] - sum);
        y[at] = scaled ? v * scale : v;
      }
    });
    return;
  }
  case Opcode::LayerNorm: {
    int64_t d = args.inBuf(1).numElements();
    int64_t rows = d ? args.inBuf(0).numElements() / d : 0;
    float eps = float(instr.as<ops::LayerNormAttrs>().epsilon);
    const float *x = args.in(0), *g = args.in(1), *b = args.in(2);
    float *y = args.out(0), *mean = args.out(1), *rstd = args.out(2);
    forEachRow(rows, stream, [=] __device__(int64_t r) {
      const float *row = x + r * d;
      float mu = 0.0f, var = 0.0f;
      for (int64_t k = threadIdx.x; k < d; k += blockDim.x)
        mu += row[k];
      mu = blockSum(mu) / float(d);
      for (int64_t k = threadIdx.x; k < d; k += blockDim.x)
        var += (row[k] - mu) * (row[k] - mu);
      var = blockSum(var) / float(d);
      float rs = 1.0f / sqrtf(var + eps);
      if (threadIdx.x == 0) {
        mean[r] = mu;
        rstd[r] = rs;
      }
      for (int64_t k = threadIdx.x; k < d; k += blockDim.x)
        y[r * d + k] = (row[k] - mu) * rs * g[k] + b[k];
    });
    return;
  }
  case Opcode::LayerNormBackward: {
    int64_t d = args.inBuf(4).numElements();
    int64_t rows = d ? args.inBuf(1).numElements() / d : 0;
    const float *dy = args.in(0), *x = args.in(1), *mean = args.in(2),
                *rstd = args.in(3), *g = args.in(4);
    float *dx = args.out(0), *dg = args.out(1), *db = args.out(2);
    forEachRow(rows, stream, [=] __device__(int64_t r) {
      float mu = mean[r], rs = rstd[r], sumDyG = 0.0f, sumDyGXhat = 0.0f;
      for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
        float xhat = (x[r * d + k] - mu) * rs, dyg = dy[r * d + k] * g[k];
        sumDyG += dyg;
        sumDyGXhat += dyg * xhat;
      }
      sumDyG = blockSum(sumDyG) / float(d);
      sumDyGXhat = blockSum(sumDyGXhat) / float(d);
      for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
        float xhat = (x[r * d + k] - mu) * rs, dyg = dy[r * d + k] * g[k];
        dx[r * d + k] = rs * (dyg - sumDyG - xhat * sumDyGXhat);
      }
    });
    columnSums(
        rows, d, stream, scratch,
        [=] __device__(int64_t r, int64_t k) {
          float xhat = (x[r * d + k] - mean[r]) * rstd[r];
          return make_float2(dy[r * d + k] * xhat, dy[r * d + k]);
        },
        [=] __device__(int64_t k, float2 s) {
          dg[k] = s.x;
          db[k] = s.y;
        });
    return;
  }
  case Opcode::NllLoss:
  case Opcode::CrossEntropy:
  case Opcode::NllLossBackward:
  case Opcode::CrossEntropyBackward: {
    bool backward =
        op == Opcode::NllLossBackward || op == Opcode::CrossEntropyBackward;
    bool logits =
        op == Opcode::CrossEntropy || op == Opcode::CrossEntropyBackward;
    size_t xi = backward ? 1 : 0, li = backward ? 2 : 1;
    int64_t rows = args.inBuf(xi).shape[0], classes = args.inBuf(xi).shape[1];
    auto [reduction, ignoreIndex] =
        op == Opcode::NllLoss
            ? std::pair(instr.as<ops::NllLossAttrs>().reduction,
                        instr.as<ops::NllLossAttrs>().ignore_index)
        : op == Opcode::CrossEntropy
            ? std::pair(instr.as<ops::CrossEntropyAttrs>().reduction,
                        instr.as<ops::CrossEntropyAttrs>().ignore_index)
        : op == Opcode::NllLossBackward
            ? std::pair(instr.as<ops::NllLossBackwardAttrs>().reduction,
                        instr.as<ops::NllLossBackwardAttrs>().ignore_index)
            : std::pair(
                  instr.as<ops::CrossEntropyBackwardAttrs>().reduction,
                  instr.as<ops::CrossEntropyBackwardAttrs>().ignore_index);
    bool mean = reduction == ops::LossReduction::Mean;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *x = args.in(xi), *grad = backward ? args.in(0) : nullptr;
    const uint8_t *labels = arena + args.inBuf(li).offset;
    bool wide = args.inBuf(li).dtype == DType::I64;
    float *y = args.out(0);
    float *count = scratch.get<float>(1);
    float *rowLoss = backward ? nullptr : scratch.get<float>(rows);
    float *taken = backward ? nullptr : scratch.get<float>(rows);
    if (backward)
      countLabels(count, rows, labels, wide, ignores, ignore, stream);
    forEachRow(rows, stream, [=] __device__(int64_t r) {
      int64_t label = loadIndex(labels, wide, r);
      bool skip = (ignores && label == ignore) || label < 0 || label >= classes;
      if (skip) {
        if (!(ignores && label == ignore) && threadIdx.x == 0)
          atomicExch(flag, 1);
        if (backward)
          for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
            y[r * classes + c] = 0.0f;
        else if (threadIdx.x == 0)
          rowLoss[r] = taken[r] = 0.0f;
        return;
      }
      const float *row = x + r * classes;
      float mx = 0.0f, sum = 1.0f;
      if (logits) {
        mx = -INFINITY;
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
          mx = fmaxf(mx, row[c]);
        mx = blockMax(mx);
        sum = 0.0f;
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
          sum += expf(row[c] - mx);
        sum = blockSum(sum);
      }
      if (!backward) {
        if (threadIdx.x == 0) {
          rowLoss[r] = -(logits ? row[label] - mx - logf(sum) : row[label]);
          taken[r] = 1.0f;
        }
        return;
      }
      float scale = grad[0] / (mean && *count > 0.0f ? *count : 1.0f);
      float *drow = y + r * classes;
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        drow[c] =
            logits
                ? scale * (expf(row[c] - mx) / sum - (c == label ? 1.0f : 0.0f))
                : (c == label ? -scale : 0.0f);
    });
    if (!backward)
      finishLoss(y, rowLoss, taken, rows, mean, stream);
    return;
  }
  case Opcode::CrossEntropyShardStats: {
    int64_t rows = args.inBuf(0).shape[0], classes = args.inBuf(0).shape[1];
    int64_t parts = instr.as<ops::CrossEntropyShardStatsAttrs>().parts;
    std::optional<int64_t> ignoreIndex =
        instr.as<ops::CrossEntropyShardStatsAttrs>().ignore_index;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *x = args.in(0);
    const uint8_t *labels = arena + args.inBuf(1).offset;
    bool wide = args.inBuf(1).dtype == DType::I64;
    const int64_t *index = args.rankIndex(2);
    float *stats = args.out(0);
    forEachRow(rows, stream, [=] __device__(int64_t r) {
      int64_t label = loadIndex(labels, wide, r);
      if (ignores && label == ignore) {
        // An ignored row's summary: (0, 0, 0), which the loss skips.
        if (threadIdx.x == 0)
          stats[3 * r] = stats[3 * r + 1] = stats[3 * r + 2] = 0.0f;
        return;
      }
      if (!validShardId(label, classes, parts, *index)) {
        if (threadIdx.x == 0)
          atomicExch(flag, 1);
        return;
      }
      label -= *index * classes;
      const float *row = x + r * classes;
      float mx = -INFINITY, sum = 0.0f;
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        mx = fmaxf(mx, row[c]);
      mx = blockMax(mx);
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        sum += expf(row[c] - mx);
      sum = blockSum(sum);
      if (threadIdx.x == 0) {
        stats[3 * r] = mx;
        stats[3 * r + 1] = sum;
        stats[3 * r + 2] = label >= 0 && label < classes ? row[label] : 0.0f;
      }
    });
    return;
  }
  case Opcode::CrossEntropyShardLoss:
  case Opcode::CrossEntropyShardBackward: {
    bool backward = op == Opcode::CrossEntropyShardBackward;
    size_t si = backward ? 3 : 0;
    int64_t parts = args.inBuf(si).shape[0], rows = args.inBuf(si).shape[1];
    int64_t classes = backward ? args.inBuf(1).shape[1] : 0;
    ops::LossReduction reduction =
        backward ? instr.as<ops::CrossEntropyShardBackwardAttrs>().reduction
                 : instr.as<ops::CrossEntropyShardLossAttrs>().reduction;
    bool mean = reduction == ops::LossReduction::Mean;
    std::optional<int64_t> ignoreIndex =
        backward ? instr.as<ops::CrossEntropyShardBackwardAttrs>().ignore_index
                 : std::nullopt;
    bool ignores = ignoreIndex.has_value();
    int64_t ignore = ignoreIndex.value_or(0);
    const float *stats = args.in(si);
    const float *x = backward ? args.in(1) : nullptr,
                *grad = backward ? args.in(0) : nullptr;
    const uint8_t *labels = backward ? arena + args.inBuf(2).offset : nullptr;
    bool wide = backward && args.inBuf(2).dtype == DType::I64;
    const int64_t *index = backward ? args.rankIndex(4) : nullptr;
    float *y = args.out(0);
    if (!backward) {
      float *rowLoss = scratch.get<float>(rows),
            *taken = scratch.get<float>(rows);
      forEach(rows, stream, [=] __device__(int64_t r) {
        float mx, sum, target;
        combineShards(stats, parts, rows, r, mx, sum, target);
        // Every shard's summary (0, 0, 0): an ignored label.
        bool ignored = sum == 0.0f;
        rowLoss[r] = ignored ? 0.0f : logf(sum) + mx - target;
        taken[r] = ignored ? 0.0f : 1.0f;
      });
      finishLoss(y, rowLoss, taken, rows, mean, stream);
      return;
    }
    float *count = scratch.get<float>(1);
    countLabels(count, rows, labels, wide, ignores, ignore, stream);
    forEachRow(rows, stream, [=] __device__(int64_t r) {
      int64_t label = loadIndex(labels, wide, r);
      if ((ignores && label == ignore) ||
          !validShardId(label, classes, parts, *index)) {
        if (!(ignores && label == ignore) && threadIdx.x == 0)
          atomicExch(flag, 1);
        for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
          y[r * classes + c] = 0.0f;
        return;
      }
      label -= *index * classes;
      float mx, sum, target;
      combineShards(stats, parts, rows, r, mx, sum, target);
      float scale = grad[0] / (mean && *count > 0.0f ? *count : 1.0f);
      for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
        y[r * classes + c] = scale * (expf(x[r * classes + c] - mx) / sum -
                                      (c == label ? 1.0f : 0.0f));
    });
    return;
  }
  case Opcode::EmbeddingBackward: {
    int64_t vocab = args.outBuf(0).shape[0], dim = args.outBuf(0).shape[1];
    bool wide = args.inBuf(1).dtype == DType::I64;
    return embeddingBackward(
        args.in(0), arena + args.inBuf(1).offset, wide,
        args.inBuf(1).numElements(), vocab, dim, args.out(0),
        args.outBuf(0).bytes, false, 1, nullptr,
        instr.as<ops::EmbeddingBackwardAttrs>().padding_idx.value_or(-1), flag,
        stream, scratch, instr);
  }
  case Opcode::EmbeddingShardBackward: {
    int64_t vocab = args.outBuf(0).shape[0], dim = args.outBuf(0).shape[1];
    bool wide = args.inBuf(1).dtype == DType::I64;
    return embeddingBackward(
        args.in(0), arena + args.inBuf(1).offset, wide,
        args.inBuf(1).numElements(), vocab, dim, args.out(0),
        args.outBuf(0).bytes, true,
        instr.as<ops::EmbeddingShardBackwardAttrs>().parts, args.rankIndex(2),
        instr.as<ops::EmbeddingShardBackwardAttrs>().padding_idx.value_or(-1),
        flag, stream, scratch, instr);
  }
  case Opcode::SumSquares: {
    // Each operand in chunks of 64 K elements, a block each, then the
    // chunks added in order by one block.
    constexpr int64_t chunk = 1 << 16;
    int64_t chunks = 0;
    for (size_t i = 0; i < instr.operands.size(); ++i)
      chunks += (args.inBuf(i).numElements() + chunk - 1) / chunk;
    float *partial = scratch.get<float>(chunks);
    int64_t first = 0;
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      const float *x = args.in(i);
      int64_t size = args.inBuf(i).numElements();
      int64_t pieces = (size + chunk - 1) / chunk;
      float *into = partial + first;
      forEachRow(pieces, stream, [=] __device__(int64_t p) {
        int64_t end = (p + 1) * chunk < size ? (p + 1) * chunk : size;
        float sum = 0.0f;
        for (int64_t k = p * chunk + threadIdx.x; k < end; k += blockDim.x)
          sum += x[k] * x[k];
        sum = blockSum(sum);
        if (threadIdx.x == 0)
          into[p] = sum;
      });
      first += pieces;
    }
    float *y = args.out(0);
    forEachRow(1, stream, [=] __device__(int64_t) {
      float sum = 0.0f;
      for (int64_t p = threadIdx.x; p < chunks; p += blockDim.x)
        sum += partial[p];
      sum = blockSum(sum);
      if (threadIdx.x == 0)
        y[0] = sum;
    });
    return;
  }
    // The cuda_reduction table's ops (the ODS's kernelTables) are the cases
    // above; a new one does not compile until it has its case.
    BRAID_CASE_NOT_CUDA_REDUCTION_OPCODES
    break;
  }
  throw KernelError(instr.describe() +
                    ": not a row-wise op (launchReductionKernel)");
}
