//===- RunDeadline.cpp - braid-run's deadline outside the steps -----------===//
//
// RunDeadline.h. The deadline thread and the SIGTERM handler share nothing
// with the steps but two atomics and the phase (Communicator.h's setPhase).
//
//===----------------------------------------------------------------------===//

#include "RunDeadline.h"

#include "braid-runtime/Communicator.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <unistd.h>

using namespace braid::rt;

namespace {

/// The deadline of the phases outside the executor's watchdog: startup
/// (MPI_Init to the first step) and the end (the --save gathers, freeing
/// the communicators, MPI_Finalize), in steady-clock nanoseconds; 0 while
/// the steps run (their collectives have the watchdog). Past it, the
/// deadline thread says where this rank is stuck (currentPhase) and exits.
std::atomic<int64_t> phaseDeadline{0};
/// What the deadline covers now, for its message ("startup", "the end").
std::atomic<const char *> deadlinePart{"startup"};

int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

void braid::rt::armDeadline(const char *part, double seconds) {
  deadlinePart = part;
  phaseDeadline = seconds > 0 ? steadyNanos() + int64_t(seconds * 1e9) : 0;
}

namespace {
/// The --timeout every phase of the end gets.
double endTimeout = 0;
} // namespace

void braid::rt::setEndTimeout(double seconds) { endTimeout = seconds; }

void braid::rt::endPhase(const std::string &phase) {
  setPhase(phase);
  armDeadline("the end of the run", endTimeout);
}

namespace {

/// Where this rank is, for a signal handler to report: the step being run
/// (0 before the first). Written by the step loop, read by onTerminate.
volatile std::sig_atomic_t currentStep = 0;
int handlerRank = 0;

/// Appends the decimal digits of `v` to `out` (async-signal-safe).
size_t appendNumber(char *out, size_t at, long v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < sizeof(digits));
  while (n > 0)
    out[at++] = digits[--n];
  return at;
}

/// SIGTERM: mpirun ends the job when another rank dies or fails; say so,
/// with the step this rank was in, instead of vanishing without a word.
/// Only async-signal-safe calls (write, _exit).
extern "C" void onTerminate(int) {
  char message[256];
  size_t at = 0;
  auto put = [&](const char *text) {
    while (*text && at < sizeof(message) - 32)
      message[at++] = *text++;
  };
  put("braid-run: error: rank ");
  at = appendNumber(message, at, handlerRank);
  if (currentStep > 0) {
    put(": terminated in step ");
    at = appendNumber(message, at, long(currentStep));
  } else {
    put(": terminated before the first step");
  }
  put(" (SIGTERM: mpirun stops the job when another rank dies or fails)\n");
  ssize_t ignored = write(2, message, at);
  (void)ignored;
  _exit(143);
}

} // namespace

void braid::rt::startDeadline(double timeout) {
  armDeadline("startup", timeout);
  std::thread([timeout] {
    for (;;) {
      int64_t deadline = phaseDeadline.load();
      if (deadline != 0 && steadyNanos() > deadline) {
        const char *rankText = std::getenv("OMPI_COMM_WORLD_RANK");
        std::string phase = currentPhase();
        std::fprintf(stderr,
                     "braid-run: error: rank %s: %s did not complete within "
                     "%g s (--timeout), stuck %s: another rank did not "
                     "start, stopped, or is elsewhere\n",
                     rankText ? rankText : "?", deadlinePart.load(), timeout,
                     phase.c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }).detach();
}

void braid::rt::reportTermination(int rank) {
  handlerRank = rank;
  std::signal(SIGTERM, onTerminate);
}

void braid::rt::setCurrentStep(long step) {
  currentStep = std::sig_atomic_t(step);
}
