//===- KernelProfile.cpp - time spent in each op's kernels ----------------===//

#include "braid-runtime/KernelProfile.h"

#include <algorithm>
#include <cstdio>
#include <utility>

using namespace braid;
using namespace braid::rt;

KernelProfile::KernelProfile(size_t streams, std::string setting)
    : setting(std::move(setting)) {
  size_t codes = size_t(ops::allOps().back()->opcode) + 1;
  perStream.assign(streams, std::vector<Entry>(codes));
  for (std::vector<Entry> &entries : perStream)
    for (size_t c = 0; c < codes; ++c)
      entries[c].opcode = ops::Opcode(c);
}

void KernelProfile::add(unsigned stream, ops::Opcode opcode, double seconds) {
  Entry &e = perStream[stream][size_t(opcode)];
  ++e.calls;
  e.seconds += seconds;
}

std::vector<KernelProfile::Entry> KernelProfile::totals() const {
  std::vector<Entry> sum;
  if (perStream.empty())
    return sum;
  sum = perStream.front();
  for (size_t s = 1; s < perStream.size(); ++s)
    for (size_t c = 0; c < sum.size(); ++c) {
      sum[c].calls += perStream[s][c].calls;
      sum[c].seconds += perStream[s][c].seconds;
    }
  sum.erase(std::remove_if(sum.begin(), sum.end(),
                           [](const Entry &e) { return e.calls == 0; }),
            sum.end());
  std::stable_sort(sum.begin(), sum.end(), [](const Entry &a, const Entry &b) {
    return a.seconds > b.seconds;
  });
  return sum;
}

void KernelProfile::clear() {
  for (std::vector<Entry> &entries : perStream)
    for (Entry &e : entries)
      e.calls = 0, e.seconds = 0;
}

std::string KernelProfile::report(uint64_t steps, double stepSeconds) const {
  std::vector<Entry> entries = totals();
  double n = double(std::max<uint64_t>(steps, 1));
  double kernels = 0;
  for (const Entry &e : entries)
    kernels += e.seconds / n;
  auto share = [&](double seconds) {
    return stepSeconds > 0 ? 100.0 * seconds / stepSeconds : 0.0;
  };
  std::string out = "profile: " + setting + "\n";
  char line[160];
  std::snprintf(line, sizeof line,
                "profile: kernels %.3f ms of a %.3f ms step (%.1f%%), "
                "per step over %llu steps\n",
                kernels * 1e3, stepSeconds * 1e3, share(kernels),
                (unsigned long long)steps);
  out += line;
  std::snprintf(line, sizeof line, "  %-26s %8s %10s %7s\n", "op", "calls",
                "ms/step", "share");
  out += line;
  for (const Entry &e : entries) {
    std::snprintf(line, sizeof line, "  %-26s %8.0f %10.3f %6.1f%%\n",
                  ops::getOpInfo(e.opcode).name, double(e.calls) / n,
                  e.seconds / n * 1e3, share(e.seconds / n));
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-26s %8s %10.3f %6.1f%%\n",
                "(outside kernels)", "",
                std::max(0.0, stepSeconds - kernels) * 1e3,
                share(std::max(0.0, stepSeconds - kernels)));
  out += line;
  return out;
}
