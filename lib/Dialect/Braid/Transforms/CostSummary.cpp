//===- CostSummary.cpp - print the cost of training steps -------*- C++ -*-===//
//
// Adds up what the ops report through CostOpInterface and
// CollectiveOpInterface, per function, and prints it.
//
//===----------------------------------------------------------------------===//

#include "CostUtils.h"

#include "braid/Dialect/Braid/BraidOps.h"
#include "braid/Dialect/Braid/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-cost-summary"

namespace braid {
#define GEN_PASS_DEF_COSTSUMMARY
#include "braid/Dialect/Braid/Passes.h.inc"
} // namespace braid

using namespace mlir;
using namespace braid;

namespace {

struct OpKindCost {
  uint64_t count = 0;
  uint64_t flops = 0;
};

struct FunctionCost {
  uint64_t computeOps = 0;
  uint64_t flops = 0;
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;
  uint64_t collectives = 0;
  uint64_t collectiveBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t params = 0;
  uint64_t paramElements = 0;
  uint64_t paramBytes = 0;
  llvm::StringMap<OpKindCost> byKind;
  llvm::StringMap<uint64_t> collectivesByKind;
};

/// `1.23 TFLOP` style, decimal units.
std::string humanFlops(uint64_t flops) {
  const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  double value = flops;
  unsigned unit = 0;
  while (value >= 1000 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  return llvm::formatv("{0:f2} {1}", value, units[unit]).str();
}

/// The gradient bytes an op reduces: the inputs of a gradient collective
/// (either form of all-reduce or reduce-scatter) that names the parameters
/// they are gradients of.
uint64_t getGradientBytes(Operation *op) {
  auto gradient = dyn_cast<GradientCollectiveOpInterface>(op);
  return gradient && gradient.getGradOf()
             ? sumTensorBytes(op->getOperandTypes())
             : 0;
}

struct CostSummaryPass : public braid::impl::CostSummaryBase<CostSummaryPass> {
  using CostSummaryBase::CostSummaryBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      LLVM_DEBUG(llvm::dbgs() << "summarizing @" << func.getName() << "\n");
      print(func, summarize(func), llvm::outs());
    }
  }

  FunctionCost summarize(FunctionOpInterface func) {
    FunctionCost cost;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      auto role =
          func.getArgAttrOfType<RoleAttr>(i, BraidDialect::kRoleAttrName);
      if (!role || role.getKind() != RoleKind::Parameter)
        continue;
      Type type = func.getArgumentTypes()[i];
      ++cost.params;
      cost.paramElements += getNumElements(type);
      cost.paramBytes += getTensorBytes(type);
    }
    func.walk([&](Operation *op) {
      if (auto compute = dyn_cast<CostOpInterface>(op)) {
        uint64_t flops = compute.getFlops();
        ++cost.computeOps;
        cost.flops += flops;
        cost.bytesRead += compute.getBytesRead();
        cost.bytesWritten += compute.getBytesWritten();
        OpKindCost &kind = cost.byKind[op->getName().getStringRef()];
        ++kind.count;
        kind.flops += flops;
      } else if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
        ++cost.collectives;
        cost.collectiveBytes += collective.getCommBytes();
        cost.gradientBytes += getGradientBytes(op);
        ++cost.collectivesByKind[op->getName().stripDialect()];
      }
    });
    numComputeOps += cost.computeOps;
    numCollectives += cost.collectives;
    return cost;
  }

  void print(FunctionOpInterface func, const FunctionCost &cost,
             raw_ostream &os) {
    auto row = [&](StringRef label) -> raw_ostream & {
      return os << "  " << llvm::left_justify(label, 26);
    };
    os << "braid cost summary: @" << func.getName() << "\n";
    row("compute ops") << cost.computeOps << "\n";
    row("flops") << cost.flops << " (" << humanFlops(cost.flops) << ")\n";
    row("bytes read") << cost.bytesRead << " (" << humanBytes(cost.bytesRead)
                      << ")\n";
    row("bytes written") << cost.bytesWritten << " ("
                         << humanBytes(cost.bytesWritten) << ")\n";
    row("collectives") << cost.collectives;
    if (!cost.collectivesByKind.empty()) {
      SmallVector<std::pair<StringRef, uint64_t>> kinds;
      for (const auto &entry : cost.collectivesByKind)
        kinds.emplace_back(entry.getKey(), entry.getValue());
      llvm::sort(kinds);
      os << " (";
      llvm::interleaveComma(kinds, os, [&](auto kind) {
        os << kind.second << " " << kind.first;
      });
      os << ")";
    }
    os << "\n";
    row("collective bytes") << cost.collectiveBytes << " ("
                            << humanBytes(cost.collectiveBytes) << ")\n";
    row("parameter tensors") << cost.params << "\n";
    row("parameter elements") << cost.paramElements << "\n";
    row("parameter bytes") << cost.paramBytes << " ("
                           << humanBytes(cost.paramBytes) << ")\n";
    row("gradient bytes to reduce") << cost.gradientBytes << " ("
                                    << humanBytes(cost.gradientBytes) << ")\n";
    if (topOps == 0 || cost.byKind.empty())
      return;
    SmallVector<std::pair<StringRef, OpKindCost>> kinds;
    for (const auto &entry : cost.byKind)
      kinds.emplace_back(entry.getKey(), entry.getValue());
    llvm::sort(kinds, [](const auto &a, const auto &b) {
      if (a.second.flops != b.second.flops)
        return a.second.flops > b.second.flops;
      return a.first < b.first;
    });
    os << "  top ops by flops:\n";
    for (const auto &[name, kind] : ArrayRef(kinds).take_front(topOps)) {
      double share = cost.flops ? 100.0 * kind.flops / cost.flops : 0.0;
      os << "    " << llvm::left_justify(name, 30)
         << llvm::right_justify(std::to_string(kind.count), 5) << " ops  "
         << kind.flops << " (" << llvm::formatv("{0:f1}", share) << "%)\n";
    }
  }
};

} // namespace
