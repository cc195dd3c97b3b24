//===- Npz.cpp - numpy .npz files -----------------------------------------===//

#include "braid-runtime/Npz.h"

#include <zip.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

using namespace braid;
using namespace braid::rt;

namespace {

unsigned descrBytes(const std::string &descr) {
  if (descr == "<f4" || descr == "<i4")
    return 4;
  if (descr == "<f8" || descr == "<i8")
    return 8;
  if (descr == "|b1")
    return 1;
  return 0;
}

/// The value of `key` in the header dict, up to the next top-level comma or
/// closing brace.
std::string field(const std::string &header, const std::string &key,
                  const std::string &file) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw NpzError(file + ": the .npy header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string::npos)
    throw NpzError(file + ": bad .npy header");
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  size_t end = at;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos)
      throw NpzError(file + ": bad shape in the .npy header");
    return header.substr(at, end - at + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}')
    ++end;
  return header.substr(at, end - at);
}

NpyArray parseNpy(const std::vector<uint8_t> &bytes, const std::string &file) {
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    throw NpzError(file + ": not a .npy array");
  unsigned major = bytes[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = bytes[8] | (bytes[9] << 8);
    start = 10;
  } else {
    if (bytes.size() < 12)
      throw NpzError(file + ": truncated .npy header");
    headerLen = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) |
                (size_t(bytes[11]) << 24);
    start = 12;
  }
  if (start + headerLen > bytes.size())
    throw NpzError(file + ": truncated .npy header");
  std::string header(bytes.begin() + start, bytes.begin() + start + headerLen);
  NpyArray array;
  std::string descr = field(header, "descr", file);
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'')
    throw NpzError(file + ": bad dtype " + descr);
  array.descr = descr.substr(1, descr.size() - 2);
  if (!descrBytes(array.descr))
    throw NpzError(file + ": unsupported dtype '" + array.descr +
                   "' (use float32, float64, int32, int64 or bool)");
  if (field(header, "fortran_order", file) != "False")
    throw NpzError(file + ": Fortran-ordered arrays are not supported");
  std::string shape = field(header, "shape", file);
  uint64_t elements = 1;
  for (size_t i = 1; i + 1 < shape.size();) {
    while (i + 1 < shape.size() && (shape[i] == ' ' || shape[i] == ','))
      ++i;
    if (i + 1 >= shape.size())
      break;
    size_t end = i;
    while (end + 1 < shape.size() &&
           isdigit(static_cast<unsigned char>(shape[end])))
      ++end;
    if (end == i || end - i > 12)
      throw NpzError(file + ": bad shape " + shape);
    int64_t d = std::stoll(shape.substr(i, end - i));
    array.shape.push_back(d);
    elements *= uint64_t(d);
    if (elements > (uint64_t(1) << 40))
      throw NpzError(file + ": array too large");
    i = end;
  }
  uint64_t need = elements * descrBytes(array.descr);
  size_t dataStart = start + headerLen;
  if (bytes.size() - dataStart != need)
    throw NpzError(
        file + ": holds " + std::to_string(bytes.size() - dataStart) +
        " bytes of data, but its shape needs " + std::to_string(need));
  array.data.assign(bytes.begin() + dataStart, bytes.end());
  return array;
}

std::string shapeTuple(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (int64_t d : shape)
    s += std::to_string(d) + ", ";
  if (shape.size() > 1)
    s.resize(s.size() - 2);
  else if (shape.size() == 1)
    s.resize(s.size() - 1);
  return s + ")";
}

} // namespace

NpyArray braid::rt::readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw NpzError("cannot read '" + path +
                   "' as .npy: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    throw NpzError("cannot read '" + path + "': " + std::strerror(errno));
  return parseNpy(bytes, path);
}

std::map<std::string, NpyArray> braid::rt::readNpz(const std::string &path) {
  int error = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (!archive) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    std::string message = zip_error_strerror(&z);
    zip_error_fini(&z);
    throw NpzError("cannot read '" + path + "' as .npz: " + message);
  }
  std::unique_ptr<zip_t, int (*)(zip_t *)> guard(archive, zip_close);
  std::map<std::string, NpyArray> arrays;
  zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, i, 0, &stat) != 0 || !stat.name)
      throw NpzError(path + ": unreadable entry " + std::to_string(i));
    std::string name = stat.name;
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      throw NpzError(path + ": entry '" + name + "' is not a .npy array");
    if (stat.size > (uint64_t(1) << 40))
      throw NpzError(path + ": entry '" + name + "' is too large");
    std::vector<uint8_t> bytes(stat.size);
    zip_file_t *file = zip_fopen_index(archive, i, 0);
    if (!file)
      throw NpzError(path + ": cannot open entry '" + name + "'");
    zip_int64_t got = zip_fread(file, bytes.data(), bytes.size());
    zip_fclose(file);
    if (got < 0 || uint64_t(got) != stat.size)
      throw NpzError(path + ": entry '" + name + "' is truncated or corrupt");
    std::string key = name.substr(0, name.size() - 4);
    arrays[key] = parseNpy(bytes, path + ":" + name);
  }
  return arrays;
}

void braid::rt::writeNpz(const std::string &path,
                         const std::map<std::string, NpyArray> &arrays) {
  int error = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (!archive)
    throw NpzError("cannot write '" + path + "'");
  // The sources must live until zip_close writes them.
  std::vector<std::vector<uint8_t>> files;
  files.reserve(arrays.size());
  for (const auto &[name, array] : arrays) {
    std::string header =
        "{'descr': '" + array.descr +
        "', 'fortran_order': False, 'shape': " + shapeTuple(array.shape) +
        ", }";
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::vector<uint8_t> bytes = {0x93,
                                  'N',
                                  'U',
                                  'M',
                                  'P',
                                  'Y',
                                  1,
                                  0,
                                  uint8_t(header.size() & 0xff),
                                  uint8_t(header.size() >> 8)};
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), array.data.begin(), array.data.end());
    files.push_back(std::move(bytes));
    zip_source_t *source =
        zip_source_buffer(archive, files.back().data(), files.back().size(), 0);
    zip_int64_t index = source ? zip_file_add(archive, (name + ".npy").c_str(),
                                              source, ZIP_FL_OVERWRITE)
                               : -1;
    // Stored, as numpy.savez stores: deflate took minutes on the 236 MB of
    // a gpt2-small layer's saved state (widened bf16 values, whose repeated
    // zero halves make long match chains).
    if (index < 0 || zip_set_file_compression(archive, zip_uint64_t(index),
                                              ZIP_CM_STORE, 0) != 0) {
      if (source && index < 0)
        zip_source_free(source);
      std::string message = zip_strerror(archive);
      zip_discard(archive);
      throw NpzError("cannot write '" + path + "': " + message);
    }
  }
  if (zip_close(archive) != 0) {
    std::string message = zip_strerror(archive);
    zip_discard(archive);
    throw NpzError("cannot write '" + path + "': " + message);
  }
}
