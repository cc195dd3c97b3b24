// RUN: not braid-opt %s --braid-assign-streams=comm-streams=0 2>&1 | FileCheck %s

// CHECK: error: comm-streams must be at least 1
func.func @f() {
  return
}
