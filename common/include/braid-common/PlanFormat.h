//===- PlanFormat.h - the plan file's header --------------------*- C++ -*-===//
//
// A plan file is this header followed by a FlatBuffer of
// common/schema/plan.fbs. Shared by the compiler, which writes plans, and the
// runtime, which reads them; it depends on zlib only (crc32).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_COMMON_PLANFORMAT_H
#define BRAID_COMMON_PLANFORMAT_H

#include <cstdint>
#include <cstring>
#include <string>

#include <zlib.h>

namespace braid::plan {

/// The first 8 bytes of every plan file.
inline constexpr char kMagic[8] = {'B', 'R', 'A', 'I', 'D', 'P', 'L', 'N'};

/// The format version this build writes and reads. Bump it when the schema
/// changes in a way older readers cannot follow.
/// Version 3: ops by opcode with typed attribute ids (the generated op
/// table), the cluster recorded. Version 4: tensor-parallel bindings (a
/// reader of version 3 would take a rank's piece for the whole value).
/// Version 5: pipeline stage programs (a reader of version 4 would run a
/// pipelined plan's empty root). Version 6: optimizer state sharded over
/// the data-parallel axis (a reader of version 5 would take a rank's piece
/// for its whole tensor-parallel piece).
inline constexpr uint32_t kFormatVersion = 6;

/// The fixed header, little-endian.
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t payloadBytes;
  uint64_t crc32;
};
static_assert(sizeof(FileHeader) == 32, "the header is 32 bytes on disk");

/// CRC-32 (zlib) of `bytes`.
inline uint64_t checksum(const uint8_t *bytes, uint64_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    uInt chunk = size > (1u << 30) ? (1u << 30) : static_cast<uInt>(size);
    crc = crc32(crc, bytes, chunk);
    bytes += chunk;
    size -= chunk;
  }
  return crc;
}

/// The header for a payload.
inline FileHeader makeHeader(const uint8_t *payload, uint64_t size) {
  FileHeader header;
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kFormatVersion;
  header.reserved = 0;
  header.payloadBytes = size;
  header.crc32 = checksum(payload, size);
  return header;
}

} // namespace braid::plan

#endif // BRAID_COMMON_PLANFORMAT_H
