//===- ScheduleReport.cpp - a scheduled step's structure as JSON ----------===//

#include "braid/Target/ScheduleReport.h"

#include "braid/Dialect/Braid/BraidDialect.h"
#include "braid/Dialect/Braid/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <map>

using namespace mlir;
using namespace braid;
namespace json = llvm::json;

namespace {

/// `["comm", 0]` for an op's stream, null without one.
json::Value streamOf(Operation *op) {
  auto stream = op->getAttrOfType<StreamAttr>(BraidDialect::kStreamAttrName);
  if (!stream)
    return nullptr;
  return json::Array{stream.getKind() == StreamKind::Comm ? "comm" : "compute",
                     int64_t(stream.getIndex())};
}

} // namespace

LogicalResult braid::writeScheduleReport(ModuleOp module, raw_ostream &os) {
  func::FuncOp func;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal()) {
      func = f;
      break;
    }
  if (!func)
    return module.emitError() << "the module has no step function";
  if (!llvm::hasSingleElement(func.getBody()))
    return func.emitError() << "a schedule report needs a function body of "
                               "one block";
  std::string world = "?";
  for (auto grid : module.getOps<shard::GridOp>()) {
    world.clear();
    llvm::raw_string_ostream ws(world);
    llvm::interleave(grid.getShape(), ws, "x");
    break;
  }

  Block &body = func.getBody().front();
  std::map<std::pair<std::string, int64_t>, int64_t> streams;
  int64_t unscheduled = 0, events = 0, sync = 0, position = 0;
  json::Array buckets;
  DenseMap<Value, size_t> bucketOfFuture;
  for (Operation &op : body.without_terminator()) {
    ++position;
    json::Value stream = streamOf(&op);
    if (auto s = stream.getAsArray())
      ++streams[{(*s)[0].getAsString()->str(), *(*s)[1].getAsInteger()}];
    else
      ++unscheduled;
    if (isa<RecordEventOp>(op))
      ++events;
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (collective && !collective.isAsync() && isa<AllReduceOp>(op))
      ++sync;
    auto gradient = dyn_cast<GradientCollectiveOpInterface>(op);
    if (collective && collective.isAsync() && gradient &&
        gradient.getGradOf()) {
      json::Array params;
      for (StringRef name : gradient.getGradOf()->getAsValueRange<StringAttr>())
        params.push_back(name.str());
      json::Object bucket{
          {"kind", collectiveKindName(collective.getCollectiveKind())},
          {"position", position},
          {"stream", std::move(stream)},
          {"params", std::move(params)},
          {"wait", nullptr}};
      if (std::optional<uint64_t> bytes = gradient.getBucketBytes())
        bucket["bytes"] = int64_t(*bytes);
      else
        bucket["bytes"] = nullptr;
      if (std::optional<uint64_t> index = gradient.getBucketIndex())
        bucket["index"] = int64_t(*index);
      else
        bucket["index"] = nullptr;
      bucketOfFuture[op.getResult(0)] = buckets.size();
      buckets.push_back(std::move(bucket));
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      auto it = bucketOfFuture.find(wait.getFuture());
      if (it != bucketOfFuture.end())
        (*buckets[it->second].getAsObject())["wait"] =
            json::Array{position, streamOf(&op)};
    }
  }
  json::Array streamList;
  if (unscheduled)
    streamList.push_back(
        json::Object{{"stream", nullptr}, {"ops", unscheduled}});
  for (auto &[key, count] : streams)
    streamList.push_back(json::Object{
        {"stream", json::Array{key.first, key.second}}, {"ops", count}});
  json::Object report{{"function", func.getName().str()},
                      {"world", world},
                      {"ops", position},
                      {"streams", std::move(streamList)},
                      {"events", events},
                      {"sync_collectives", sync},
                      {"buckets", std::move(buckets)}};
  os << llvm::formatv("{0:2}", json::Value(std::move(report))) << "\n";
  return success();
}

void braid::registerToScheduleReportTranslation() {
  TranslateFromMLIRRegistration registration(
      "braid-to-schedule-report",
      "write the streams and gradient buckets of a braid step as JSON",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          // The verifier rules this out: not reachable from input.
          return op->emitError() << "expected a builtin.module";
        return writeScheduleReport(module, os);
      },
      [](DialectRegistry &registry) {
        registry.insert<BraidDialect, func::FuncDialect, shard::ShardDialect>();
      });
}
