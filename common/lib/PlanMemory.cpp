//===- PlanMemory.cpp - what a plan's arena holds, and whether it fits ----===//

#include "braid-common/PlanMemory.h"
#include "braid-common/OpTable.h"
#include "braid-common/PlanFormat.h"

#include "plan_generated.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

using namespace braid;
using namespace braid::plan;

namespace {

using Range = std::pair<uint64_t, uint64_t>;

/// Merges `ranges` into disjoint sorted ones.
std::vector<Range> merged(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> out;
  for (const Range &r : ranges) {
    if (r.first >= r.second)
      continue;
    if (!out.empty() && r.first <= out.back().second)
      out.back().second = std::max(out.back().second, r.second);
    else
      out.push_back(r);
  }
  return out;
}

/// Adds `ranges` to the disjoint `covered` and returns the bytes that were
/// not covered before.
uint64_t claim(std::vector<Range> &covered, const std::vector<Range> &ranges) {
  auto bytes = [](const std::vector<Range> &rs) {
    uint64_t n = 0;
    for (const Range &r : rs)
      n += r.second - r.first;
    return n;
  };
  uint64_t before = bytes(covered);
  std::vector<Range> all = covered;
  all.insert(all.end(), ranges.begin(), ranges.end());
  covered = merged(std::move(all));
  return bytes(covered) - before;
}

/// Bytes in the largest binary unit they fill, to one decimal.
std::string gib(uint64_t bytes) {
  static const char *const units[] = {"GiB", "MiB", "KiB"};
  for (int u = 0; u < 3; ++u) {
    double unit = double(1ull << (30 - 10 * u));
    if (double(bytes) >= unit) {
      char s[32];
      std::snprintf(s, sizeof s, "%.1f %s", double(bytes) / unit, units[u]);
      return s;
    }
  }
  return std::to_string(bytes) + " bytes";
}

} // namespace

std::vector<std::pair<const char *, uint64_t>> MemoryUse::consumers() const {
  std::vector<std::pair<const char *, uint64_t>> out = {
      {"parameters", parameters},
      {"optimizer state", optimizerState},
      {"batch", batch},
      {"communication buffers", communication},
      {"activations and other temporaries", other}};
  out.erase(std::remove_if(out.begin(), out.end(),
                           [](const auto &c) { return c.second == 0; }),
            out.end());
  std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.second > b.second;
  });
  return out;
}

/// The arena of one program (a plan table without stages) by use; false
/// if a binding or an instruction names a buffer it lacks.
static bool programMemoryUse(const Plan *fb, MemoryUse &use) {
  std::vector<Range> params, state, batch, comm;
  auto add = [&](std::vector<Range> &to, uint32_t buffer) {
    if (!fb->buffers() || buffer >= fb->buffers()->size())
      return false;
    const Buffer *b = fb->buffers()->Get(buffer);
    to.push_back({b->offset(), b->offset() + b->bytes()});
    return true;
  };
  bool ok = true;
  for (const auto *list : {fb->arguments(), fb->results()})
    if (list)
      for (const Binding *binding : *list) {
        if (binding->role() == Role::Parameter)
          ok &= add(params, binding->buffer());
        else if (binding->role() == Role::OptimizerState)
          ok &= add(state, binding->buffer());
        else if (binding->role() == Role::Batch)
          ok &= add(batch, binding->buffer());
      }
  if (fb->streams())
    for (const Stream *stream : *fb->streams())
      if (stream->instrs())
        for (const Instr *instr : *stream->instrs()) {
          const ops::OpInfo *info = ops::findOp(instr->opcode());
          if (!info || info->collective == CollectiveKind::None)
            continue;
          for (const auto *list : {instr->operands(), instr->results()})
            if (list)
              for (uint32_t b : *list)
                ok &= add(comm, b);
        }
  if (!ok)
    return false;
  use = MemoryUse();
  use.total = fb->arena_bytes();
  std::vector<Range> covered;
  use.parameters = claim(covered, params);
  use.optimizerState = claim(covered, state);
  use.batch = claim(covered, batch);
  use.communication = claim(covered, comm);
  uint64_t claimed =
      use.parameters + use.optimizerState + use.batch + use.communication;
  use.other = use.total > claimed ? use.total - claimed : 0;
  return true;
}

bool plan::planMemoryUse(const uint8_t *bytes, size_t size, MemoryUse &use,
                         std::string &error) {
  FileHeader header;
  if (size < sizeof(header)) {
    error = "shorter than a plan header";
    return false;
  }
  std::memcpy(&header, bytes, sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 ||
      header.version != kFormatVersion ||
      header.payloadBytes != size - sizeof(header)) {
    error = "not a plan file of format " + std::to_string(kFormatVersion);
    return false;
  }
  // FlatBuffers reads its scalars in place: the payload must be aligned.
  std::vector<uint64_t> aligned((header.payloadBytes + 7) / 8);
  std::memcpy(aligned.data(), bytes + sizeof(header), header.payloadBytes);
  const auto *payload = reinterpret_cast<const uint8_t *>(aligned.data());
  flatbuffers::Verifier verifier(payload, header.payloadBytes,
                                 /*max_depth=*/64, /*max_tables=*/50000000);
  if (!VerifyPlanBuffer(verifier)) {
    error = "the payload is not a valid plan FlatBuffer";
    return false;
  }
  const Plan *fb = GetPlan(payload);
  // A pipelined plan: its largest stage program is what a rank must hold.
  std::vector<const Plan *> programs;
  if (fb->stages() && fb->stages()->size())
    programs.assign(fb->stages()->begin(), fb->stages()->end());
  else
    programs.push_back(fb);
  use = MemoryUse();
  for (const Plan *program : programs) {
    MemoryUse one;
    if (!programMemoryUse(program, one)) {
      error = "a binding or an instruction names a buffer the plan lacks";
      return false;
    }
    if (one.total >= use.total)
      use = one;
  }
  return true;
}

std::string plan::describeConsumers(const MemoryUse &use) {
  std::string out;
  for (const auto &[name, bytes] : use.consumers())
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + gib(bytes);
  return out;
}

std::string plan::memoryShortfall(const MemoryUse &use, uint64_t capacityBytes,
                                  const std::string &gpu) {
  if (capacityBytes == 0 || use.total <= capacityBytes)
    return "";
  return "the plan needs " + gib(use.total) + " a rank, " +
         gib(use.total - capacityBytes) + " more than the " +
         gib(capacityBytes) + " of one " + gpu +
         "; largest: " + describeConsumers(use);
}
