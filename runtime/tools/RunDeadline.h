//===- RunDeadline.h - braid-run's deadline outside the steps ---*- C++ -*-===//
//
// Startup (MPI_Init to the first step) and the end of the run (the --save
// gathers, freeing the communicators, MPI_Finalize) run outside the
// executor's watchdog: a thread ends the rank, saying where it is stuck,
// when a phase outlives --timeout. And a SIGTERM from mpirun (another rank
// died) is reported with the step this rank was in.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_RUNDEADLINE_H
#define BRAID_RUNTIME_TOOLS_RUNDEADLINE_H

#include <string>

namespace braid::rt {

/// Arms the deadline `seconds` from now for `part` ("startup", "the end of
/// the run"), or disarms it (0): the steps have the watchdog.
void armDeadline(const char *part, double seconds);

/// Arms the deadline for startup and starts the thread that watches it (a
/// rank past it prints where it is stuck and exits 1).
void startDeadline(double timeout);

/// The --timeout each phase of the end gets.
void setEndTimeout(double seconds);

/// Enters a phase of the end of the run: `phase` is what the deadline's
/// message says this rank is stuck in; each phase has --timeout seconds.
void endPhase(const std::string &phase);

/// Reports a SIGTERM as this rank's, with the step it was in.
void reportTermination(int rank);

/// The step being run (0 before the first), for that report.
void setCurrentStep(long step);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_RUNDEADLINE_H
