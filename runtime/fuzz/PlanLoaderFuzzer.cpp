//===- PlanLoaderFuzzer.cpp - libFuzzer target for the plan loader --------===//
//
// Feeds arbitrary bytes to the loader, both as a whole file (header and
// checksum) and as a bare payload (so that mutations get past the checksum
// into the FlatBuffer verifier and the plan's checks). Any input must either
// load or throw PlanError: a crash, a leak or undefined behavior is a bug.
// The build stops at the first UBSan report (-fno-sanitize-recover=all):
// with BRAID_FUZZER_UBSAN_SELF_TEST=1 in the environment (out of the
// fuzzer's reach; a magic input prefix, it finds) every input overflows a
// signed integer on purpose, so that integration_test/runtime/
// plan-fuzzer.test can check that a report fails the run.
//
//===----------------------------------------------------------------------===//

#include "braid-runtime/Plan.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace braid::rt;
  static const bool selfTest = std::getenv("BRAID_FUZZER_UBSAN_SELF_TEST");
  if (selfTest) {
    // INT32_MAX plus at least 1: undefined behavior.
    volatile int32_t big = INT32_MAX;
    volatile int32_t sum = big + int32_t((size ? data[0] : 0) | 1);
    (void)sum;
    return 0;
  }
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
