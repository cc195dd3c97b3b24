// braid-overlap's options are checked once, by the pass each reaches (the
// enum and the numbers by the option parser), naming them.
// RUN: not braid-opt %s --braid-overlap=bucket-cap-mb=-1 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: not braid-opt %s --braid-overlap=comm-streams=0 2>&1 | FileCheck %s --check-prefix=STREAMS
// RUN: not braid-opt %s --braid-overlap=max-live-increase=-1 2>&1 | FileCheck %s --check-prefix=LIVE
// RUN: not braid-opt %s --braid-overlap=bucket-cap-mb=abc 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not braid-opt %s --braid-overlap=schedule=fast 2>&1 | FileCheck %s --check-prefix=SCHEDULE

// CAP: error: bucket-cap-mb must be a positive number of MiB, but is -1
// STREAMS: error: comm-streams must be between 1 and 64, but is 0
// LIVE: error: max-live-increase must be non-negative, but is -1
// PARSE: for the --bucket-cap-mb option: 'abc' value invalid for floating point argument
// SCHEDULE: for the --schedule option: Cannot find option named 'fast'

func.func @f() {
  return
}
