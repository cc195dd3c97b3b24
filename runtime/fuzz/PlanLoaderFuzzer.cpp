//===- PlanLoaderFuzzer.cpp - libFuzzer target for the plan loader --------===//
//
// Feeds arbitrary bytes to the loader, both as a whole file (header and
// checksum) and as a bare payload (so that mutations get past the checksum
// into the FlatBuffer verifier and the plan's checks). Any input must either
// load or throw PlanError: a crash, a leak or undefined behavior is a bug.
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/Plan.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace braid::rt;
  try {
    Plan plan = loadPlan(data, size);
    (void)dumpPlan(plan);
  } catch (const PlanError &) {
  }
  try {
    Plan plan = loadPayload(data, size, 1);
    (void)dumpPlan(plan);
  } catch (const PlanError &) {
  }
  return 0;
}
