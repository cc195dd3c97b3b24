// RUN: not braid-opt %s --braid-assign-streams=comm-streams=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not braid-opt %s --braid-assign-streams=comm-streams=65 2>&1 | FileCheck %s --check-prefix=MANY

// ZERO: error: comm-streams must be between 1 and 64, but is 0
// MANY: error: comm-streams must be between 1 and 64, but is 65
func.func @f() {
  return
}
