//===- braid-gpu-bench.cu - what one GPU measures for the cost model ------===//
//
// usage: braid-gpu-bench [OUT.json] [--quick]
//
// Measures, on GPU 0 of this machine, the figures the cost model assumes:
//   - GEMM rates (cuBLAS, C = A·B, square n x n x n, n = 512 ... 8192):
//     f32 (cublasSgemm, no TF32), tf32 and bf16 (cublasGemmEx, FP32
//     accumulation), in TFLOP/s, the median of timed repetitions;
//   - memory bandwidth: a device-to-device copy of 1 GiB and a kernel that
//     reads and writes 1 GiB, in GB/s (bytes read + written);
//   - kernel launch: an empty kernel enqueued 2000 times, the mean host
//     time per launch and the device time per kernel.
// Prints a table and writes the figures as JSON (utils/gpu-check.sh keeps
// the file). Each figure is timed with CUDA events after warm-up runs.
//
//===----------------------------------------------------------------------===//

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "braid-gpu-bench: %s\n", message.c_str());
  std::exit(1);
}

void cuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    die(std::string(what) + ": " + cudaGetErrorString(e));
}

void blas(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    die(std::string(what) + " failed with cuBLAS status " +
        std::to_string(int(s)));
}

/// The median device time in seconds of `reps` runs of `work` on `stream`,
/// after `warmup` untimed runs.
double timeIt(cudaStream_t stream, int warmup, int reps,
              const std::function<void()> &work) {
  for (int i = 0; i < warmup; ++i)
    work();
  cudaEvent_t start, stop;
  cuda(cudaEventCreate(&start), "cudaEventCreate");
  cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    work();
    cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

__global__ void scaleKernel(const float *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    y[i] = 2.0f * x[i];
}

__global__ void emptyKernel() {}

} // namespace

int main(int argc, char **argv) {
  std::string out;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: braid-gpu-bench [OUT.json] [--quick]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-')
      die("unknown option '" + a +
          "' (usage: braid-gpu-bench [OUT.json] "
          "[--quick])");
    else
      out = a;
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    die(std::string("no usable GPU: ") +
        (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
  cuda(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop;
  cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
       "cudaStreamCreate");
  cublasHandle_t handle;
  blas(cublasCreate(&handle), "cublasCreate");
  blas(cublasSetStream(handle, stream), "cublasSetStream");

  std::string json =
      "{\n  \"device\": \"" + std::string(prop.name) +
      "\",\n  \"sm_count\": " + std::to_string(prop.multiProcessorCount) +
      ",\n  \"memory_bytes\": " + std::to_string(prop.totalGlobalMem) +
      ",\n  \"gemm\": [";
  std::printf("braid-gpu-bench: %s, %d SMs, %.1f GiB\n", prop.name,
              prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
  std::printf("  %-6s %6s %12s\n", "gemm", "n", "TFLOP/s");

  std::vector<int> sizes = quick
                               ? std::vector<int>{512, 2048}
                               : std::vector<int>{512, 1024, 2048, 4096, 8192};
  size_t most = size_t(sizes.back()) * sizes.back();
  void *a, *b, *c;
  cuda(cudaMalloc(&a, most * 4), "cudaMalloc");
  cuda(cudaMalloc(&b, most * 4), "cudaMalloc");
  cuda(cudaMalloc(&c, most * 4), "cudaMalloc");
  cuda(cudaMemsetAsync(a, 0, most * 4, stream), "cudaMemset");
  cuda(cudaMemsetAsync(b, 0, most * 4, stream), "cudaMemset");
  bool first = true;
  for (const char *kind : {"f32", "tf32", "bf16"}) {
    std::string k = kind;
    blas(cublasSetMathMode(handle, k == "tf32" ? CUBLAS_TF32_TENSOR_OP_MATH
                                               : CUBLAS_DEFAULT_MATH),
         "cublasSetMathMode");
    for (int n : sizes) {
      float one = 1.0f, zero = 0.0f;
      auto gemm = [&] {
        if (k == "bf16")
          blas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a,
                            CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero, c,
                            CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
        else
          blas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                           static_cast<float *>(a), n, static_cast<float *>(b),
                           n, &zero, static_cast<float *>(c), n),
               "cublasSgemm");
      };
      double s = timeIt(stream, 3, n >= 4096 ? 5 : 20, gemm);
      double tflops = 2.0 * n * double(n) * n / s / 1e12;
      std::printf("  %-6s %6d %12.1f\n", kind, n, tflops);
      char line[160];
      std::snprintf(line, sizeof line,
                    "%s\n    {\"dtype\": \"%s\", \"m\": %d, \"n\": %d, \"k\": "
                    "%d, \"tflops\": %.2f}",
                    first ? "" : ",", kind, n, n, n, tflops);
      json += line;
      first = false;
    }
  }
  json += "\n  ],\n";
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);

  // Memory bandwidth over 1 GiB (256 MiB with --quick).
  size_t bytes = quick ? (size_t(1) << 28) : (size_t(1) << 30);
  void *x, *y;
  cuda(cudaMalloc(&x, bytes), "cudaMalloc");
  cuda(cudaMalloc(&y, bytes), "cudaMalloc");
  cuda(cudaMemsetAsync(x, 0, bytes, stream), "cudaMemset");
  double copy = timeIt(stream, 2, 10, [&] {
    cuda(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, stream),
         "cudaMemcpyAsync");
  });
  int64_t n = int64_t(bytes / 4);
  int blocks = prop.multiProcessorCount * 8;
  double kernel = timeIt(stream, 2, 10, [&] {
    scaleKernel<<<blocks, 256, 0, stream>>>(static_cast<float *>(x),
                                            static_cast<float *>(y), n);
  });
  cuda(cudaGetLastError(), "launching the bandwidth kernel");
  double copyGBs = 2.0 * bytes / copy / 1e9,
         kernelGBs = 2.0 * bytes / kernel / 1e9;
  std::printf("  memory: copy %.0f GB/s, read+write kernel %.0f GB/s (%zu MiB, "
              "bytes read + written)\n",
              copyGBs, kernelGBs, bytes >> 20);
  cudaFree(x);
  cudaFree(y);

  // Launch: host time per enqueue, device time per empty kernel.
  const int launches = 2000;
  auto host0 = std::chrono::steady_clock::now();
  double device = timeIt(stream, 1, 3, [&] {
    for (int i = 0; i < launches; ++i)
      emptyKernel<<<1, 32, 0, stream>>>();
  });
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - host0)
          .count() /
      (4.0 * launches);
  cuda(cudaGetLastError(), "launching the empty kernel");
  std::printf("  launch: %.2f us host per enqueue, %.2f us device per empty "
              "kernel\n",
              host * 1e6, device / launches * 1e6);
  char tail[400];
  std::snprintf(
      tail, sizeof tail,
      "  \"memory_bandwidth_gbs\": {\"copy\": %.1f, \"kernel\": %.1f},\n"
      "  \"launch_us\": {\"host\": %.3f, \"device\": %.3f}\n}\n",
      copyGBs, kernelGBs, host * 1e6, device / launches * 1e6);
  json += tail;
  if (!out.empty()) {
    FILE *f = std::fopen(out.c_str(), "w");
    if (!f)
      die("cannot write " + out);
    std::fputs(json.c_str(), f);
    std::fclose(f);
    std::printf("braid-gpu-bench: wrote %s\n", out.c_str());
  }
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  return 0;
}
