//===- CpuBackend.h - the cpu backend ---------------------------*- C++ -*-===//

#ifndef BRAID_RUNTIME_CPUBACKEND_H
#define BRAID_RUNTIME_CPUBACKEND_H

#include "braid-runtime/Executor.h"
#include "braid-runtime/MemoryChecker.h"
#include "braid-runtime/MpiCommunicator.h"
#include "braid-runtime/Watchdog.h"

#include <mpi.h>

#include <map>
#include <memory>
#include <string>

namespace braid::rt {

/// The OPENBLAS_CORETYPE that braid-run should run with, or null to run as
/// it is. OpenBLAS (Debian's DYNAMIC_ARCH build, 0.3.21) picks its kernels
/// by CPU model when it loads and falls back to Prescott's SSE3 kernels on
/// models it does not know: on an Emerald Rapids Xeon (family 6, model 207)
/// sgemm runs 4x slower than with its SkylakeX kernels. Where OpenBLAS took
/// a pre-AVX2 core on a CPU with AVX-512 (SkylakeX) or AVX2 and FMA
/// (Haswell), this names the better one; it is null where the user set
/// OPENBLAS_CORETYPE. The variable is read when the library loads, so
/// braid-run sets it and runs itself again before anything else.
const char *betterOpenblasCore();
/// The kernels OpenBLAS uses ("SkylakeX"), for the profile's header.
std::string openblasCore();

/// Kernels on the stream threads (BLAS for matmul), collectives over MPI.
class CpuBackend : public Backend {
public:
  /// `checkMemory` checks every read against the memory plan
  /// (MemoryChecker.h), at some cost in speed; `profile` times every kernel
  /// (KernelProfile.h).
  CpuBackend(MPI_Comm world, double timeoutSeconds, bool checkMemory = false,
             bool profile = false, int threads = 1);
  ~CpuBackend() override;

  const char *name() const override { return "cpu"; }
  void prepare(const Plan &plan) override;
  void setProgram(const Plan &program) override;
  void connect() override;
  void kernel(unsigned stream, const Instr &instr) override;
  void collective(unsigned stream, const Instr &instr) override;
  void startCollective(unsigned stream, const Instr &instr) override;
  void waitCollective(unsigned stream, const Instr &start) override;
  void idle(unsigned stream) override;
  void read(const Buffer &buffer, void *dst) override;
  void write(const Buffer &buffer, const void *src) override;
  void copy(const Buffer &dst, const Buffer &src) override;
  KernelProfile *kernelProfile() override { return profile.get(); }

private:
  /// A collective's staging memory and what it unpacks once complete.
  class Staging : public CollectiveMemory {
  public:
    void copy(uint8_t *dst, const uint8_t *src, uint64_t bytes) override;
    void upload(uint8_t *dst, const void *src, uint64_t bytes) override;
    void copyRows(uint8_t *dst, uint64_t dstPitch, const uint8_t *src,
                  uint64_t srcPitch, uint64_t width, uint64_t rows) override;
    uint8_t *staging(uint64_t bytes) override;
    void afterwards(std::function<void()> fn) override;
    /// After the communication: the unpacking, then the memory is freed.
    void finish();

  private:
    std::vector<std::unique_ptr<uint8_t[]>> buffers;
    std::vector<std::function<void()>> pending;
  };
  struct Pending {
    MpiWork work;
    Staging staging;
    std::vector<Watchdog::Arrival> arrivals;
  };
  /// One of the plan's communicators (forEachCommunicator's order).
  struct Comm {
    std::unique_ptr<MpiCommunicator> comm;
    int id = 0;
    /// The world ranks of its members, by index, for the watchdog.
    std::vector<int> members;
  };
  /// Announces `instr` on `comm` to the ranks it waits for.
  std::vector<Watchdog::Arrival> announce(const Instr &instr, const Comm &comm);
  void post(unsigned stream, const Instr &instr, Pending &pending);
  void complete(const Instr &instr, Pending &pending);

  /// Checker bookkeeping (no-ops without --check-memory).
  void define(const std::vector<uint32_t> &ids);
  void use(const std::vector<uint32_t> &ids, const Instr &instr,
           const char *when = "");
  uint32_t idOf(const Buffer &buffer) const {
    return uint32_t(&buffer - plan->buffers.data());
  }

  MPI_Comm world;
  int rank = 0;
  bool checkMemory, profiling;
  /// The checker of the program running (with --check-memory), and one per
  /// program set by setProgram.
  MemoryChecker *checker = nullptr;
  std::map<const Plan *, std::unique_ptr<MemoryChecker>> checkers;
  std::unique_ptr<KernelProfile> profile;
  Watchdog watchdog;
  /// The program running, and the plan prepared (the step, whose kernels
  /// alone --profile times).
  const Plan *plan = nullptr, *prepared = nullptr;
  uint8_t *arena = nullptr;
  /// Every communicator of the plan, those this program does not use too,
  /// and the program's (device group, stream) -> its communicator.
  std::vector<std::unique_ptr<Comm>> communicators;
  std::map<std::pair<int, unsigned>, Comm *> comms;
  std::vector<Pending> inFlight, syncPending;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_CPUBACKEND_H
