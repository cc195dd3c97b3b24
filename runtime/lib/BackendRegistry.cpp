//===- BackendRegistry.cpp - the backends braid-run can run on ------------===//

#include "braid-runtime/BackendRegistry.h"

#include <map>
#include <stdexcept>

using namespace braid::rt;

static std::map<std::string, BackendFactory> &registry() {
  static std::map<std::string, BackendFactory> backends;
  return backends;
}

void braid::rt::registerBackend(const std::string &name,
                                BackendFactory factory) {
  registry()[name] = std::move(factory);
}

std::unique_ptr<Backend>
braid::rt::createBackend(const std::string &name,
                         const BackendOptions &options) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const std::string &n : registeredBackends())
      known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("this braid-run has no " + name +
                             " backend (it has: " + known + ")");
  }
  return it->second(options);
}

std::vector<std::string> braid::rt::registeredBackends() {
  std::vector<std::string> names;
  for (const auto &[name, factory] : registry())
    names.push_back(name);
  return names;
}
