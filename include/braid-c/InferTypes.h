/*===- InferTypes.h - braid's result-type inference, as C ---------*- C -*-===*\
|*                                                                            *|
|* The braid ops' InferTypeOpInterface behind a C function, so that a       *|
|* program without MLIR's bindings can ask what an op yields: braid.ir,     *|
|* the Python IR builder, calls it through ctypes (python/braid/_native.py) *|
|* instead of computing shapes itself. libBraidCAPI.so holds it.            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BRAID_C_INFERTYPES_H
#define BRAID_C_INFERTYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What braidInferResultTypes returns.
enum BraidInferStatus {
  /// `out` holds the result types, one per line.
  BraidInferOk = 0,
  /// `out` holds the error: the op is unknown, does not infer its result
  /// types, or rejects the operands or attributes (its verifier's words).
  BraidInferError = 1,
  /// `out` is too small; `*needed` is the size that fits.
  BraidInferTooSmall = 2,
};

/// The result types of op `name` ("braid.matmul") on operands of
/// `operandTypes` (MLIR type text, one per line: "tensor<4x8xf32>") with
/// `attributes` (an attribute dictionary in MLIR's generic syntax:
/// "{transpose_b, dims = array<i64: 0>}"), as the op's InferTypeOpInterface
/// infers them. Writes NUL-terminated text into `out` (`outSize` bytes) and
/// sets `*needed` to its size with the NUL. Safe to call from any thread.
int braidInferResultTypes(const char *name, const char *operandTypes,
                          const char *attributes, char *out, size_t outSize,
                          size_t *needed);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_INFERTYPES_H
