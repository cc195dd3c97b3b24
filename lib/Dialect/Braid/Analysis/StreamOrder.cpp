//===- StreamOrder.cpp - happens-before across streams --------------------===//

#include "braid/Dialect/Braid/Analysis/StreamOrder.h"

using namespace braid;

StreamOrder::Clock &StreamOrder::clockOf(unsigned stream) {
  if (clocks.size() <= stream)
    clocks.resize(stream + 1);
  Clock &clock = clocks[stream];
  if (clock.size() <= stream)
    clock.resize(stream + 1, 0);
  return clock;
}

void StreamOrder::merge(Clock &into, const Clock &from) {
  if (into.size() < from.size())
    into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

void StreamOrder::issue(const void *op, unsigned stream) {
  Clock &clock = clockOf(stream);
  clock[stream] = ++position;
  issued[op] = Issued{stream, position, clock};
}

bool StreamOrder::waitFor(unsigned stream, const void *op) {
  auto it = issued.find(op);
  if (it == issued.end())
    return false;
  // Copied first: clockOf may grow the clocks the entry does not alias.
  Clock after = it->second.after;
  merge(clockOf(stream), after);
  return true;
}

bool StreamOrder::isOrderedBefore(const void *op, unsigned stream) const {
  auto it = issued.find(op);
  if (it == issued.end())
    return false;
  const Issued &entry = it->second;
  if (entry.stream == stream)
    return true;
  if (stream >= clocks.size())
    return false;
  const Clock &clock = clocks[stream];
  return entry.stream < clock.size() && clock[entry.stream] >= entry.position;
}

std::optional<unsigned> StreamOrder::getStream(const void *op) const {
  auto it = issued.find(op);
  if (it == issued.end())
    return std::nullopt;
  return it->second.stream;
}

unsigned StreamOrder::getPosition(const void *op) const {
  auto it = issued.find(op);
  return it == issued.end() ? 0 : it->second.position;
}
