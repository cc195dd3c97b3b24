//===- Npz.h - numpy .npz files ---------------------------------*- C++ -*-===//
//
// Reads and writes the .npz files numpy.savez writes (a zip of .npy files,
// through libzip). Little-endian, C order; dtypes f4, f8, i4, i8, b1.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_NPZ_H
#define BRAID_RUNTIME_NPZ_H

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid::rt {

struct NpzError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct NpyArray {
  /// numpy's type string: "<f4", "<i8", ...
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// The arrays of an .npz file by name (without ".npy").
std::map<std::string, NpyArray> readNpz(const std::string &path);

/// The array of a .npy file.
NpyArray readNpy(const std::string &path);

void writeNpz(const std::string &path,
              const std::map<std::string, NpyArray> &arrays);

} // namespace braid::rt

#endif // BRAID_RUNTIME_NPZ_H
