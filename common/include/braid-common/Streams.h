//===- Streams.h - the streams a step may have ------------------*- C++ -*-===//
//
// Shared by the compiler (#braid.stream's verifier, braid-assign-streams)
// and the runtime (the plan loader): one compute stream, and at most
// kMaxCommStreams communication streams.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_STREAMS_H
#define BRAID_COMMON_STREAMS_H

namespace braid {

/// The most communication streams a step may have (#braid.stream<comm, 0>
/// to <comm, kMaxCommStreams - 1>).
inline constexpr unsigned kMaxCommStreams = 64;

} // namespace braid

#endif // BRAID_COMMON_STREAMS_H
