//===- BraidAttributes.cpp - braid attributes -------------------*- C++ -*-===//

#include "braid/Dialect/Braid/BraidAttributes.h"
#include "braid-common/Streams.h"
#include "braid/Dialect/Braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace braid;

#include "braid/Dialect/Braid/BraidEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "braid/Dialect/Braid/BraidAttributes.cpp.inc"

std::string braid::pipelineScheduleNames() {
  std::string names;
  for (uint32_t i = 0; i <= getMaxEnumValForPipelineScheduleKind(); ++i)
    if (std::optional<PipelineScheduleKind> kind =
            symbolizePipelineScheduleKind(i))
      names += (names.empty() ? "" : ", ") +
               stringifyPipelineScheduleKind(*kind).str();
  return names;
}

FailureOr<PipelineScheduleKind>
braid::parsePipelineScheduleName(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  if (std::optional<PipelineScheduleKind> kind =
          symbolizePipelineScheduleKind(name))
    return *kind;
  return parser.emitError(loc)
         << "unknown pipeline schedule '" << name
         << "' (known: " << pipelineScheduleNames() << ")";
}

LogicalResult PipelineAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t axis, int64_t microBatches,
                                   PipelineScheduleKind schedule,
                                   int64_t virtualStages,
                                   ArrayAttr boundaries) {
  if (axis < 0)
    return emitError() << "a pipeline's axis is non-negative, but is " << axis;
  for (auto [count, what] : {std::pair{microBatches, "micro-batches"},
                             std::pair{virtualStages, "virtual stages"}})
    if (count < 1 || count > BraidDialect::kMaxMicroBatches)
      return emitError() << "a pipeline asks for " << count << " " << what
                         << ", but braid-pipeline takes 1 to "
                         << BraidDialect::kMaxMicroBatches;
  bool interleaved = schedule == PipelineScheduleKind::Interleaved;
  if (interleaved ? virtualStages < 2 : virtualStages != 1)
    return emitError()
           << (interleaved ? "the interleaved schedule needs virtual_stages "
                             "of at least 2 (with 1 it is 1f1b)"
                           : "virtual_stages is for the interleaved schedule")
           << ", but a pipeline asks for " << virtualStages
           << " virtual stages under \""
           << stringifyPipelineScheduleKind(schedule) << "\"";
  if (boundaries && !llvm::all_of(boundaries, [](Attribute name) {
        return isa<StringAttr>(name);
      }))
    return emitError() << "a pipeline's boundaries are module names "
                          "(strings), but are "
                       << boundaries;
  return success();
}

LogicalResult RoleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               RoleKind kind, StringRef name) {
  if (name.empty())
    return emitError() << "a " << stringifyRoleKind(kind)
                       << " role needs a non-empty name";
  return success();
}

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                FlatSymbolRefAttr grid, int64_t axis,
                                int64_t index) {
  if (axis < 0 || index < 0)
    return emitError() << "a stage's axis and index are non-negative, but "
                          "they are "
                       << axis << " and " << index;
  return success();
}

LogicalResult TransferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t value, int64_t microBatch) {
  if (value < 0 || microBatch < -1)
    return emitError() << "a transfer's value is non-negative and its "
                          "micro-batch non-negative or absent, but they are "
                       << value << " and " << microBatch;
  return success();
}

FailureOr<SmallVector<int64_t>> braid::parseAxisList(AsmParser &parser) {
  SmallVector<int64_t> axes;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(axes.emplace_back());
      }))
    return failure();
  return axes;
}

void braid::printAxisList(AsmPrinter &printer, ArrayRef<int64_t> axes) {
  printer << "[";
  llvm::interleaveComma(axes, printer);
  printer << "]";
}

LogicalResult
TensorParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           FlatSymbolRefAttr grid, int64_t axis,
                           ArrayRef<int64_t> innerAxes) {
  if (!grid || axis < 0)
    return emitError() << "a tensor-parallel axis is a grid and a "
                          "non-negative axis, but is "
                       << grid << " and " << axis;
  for (auto [i, inner] : llvm::enumerate(innerAxes))
    if (inner < 0 || inner == axis ||
        llvm::is_contained(innerAxes.take_front(i), inner))
      return emitError() << "a tensor-parallel step's inner axes are "
                            "non-negative and each partitioned once, but "
                            "axis "
                         << inner << " is not";
  return success();
}

LogicalResult
DataParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         FlatSymbolRefAttr grid, int64_t axis,
                         int64_t zeroStage) {
  if (!grid || axis < 0)
    return emitError() << "a data-parallel axis is a grid and a "
                          "non-negative axis, but is "
                       << grid << " and " << axis;
  if (zeroStage < 1 || zeroStage > 3)
    return emitError() << "a sharded step's ZeRO stage is 1, 2 or 3, but is "
                       << zeroStage;
  return success();
}

SmallVector<int64_t> TensorParallelAttr::getAllAxes() const {
  SmallVector<int64_t> all = {getAxis()};
  llvm::append_range(all, getInnerAxes());
  return all;
}

LogicalResult ActionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 PipelineActionKind, int64_t microBatch) {
  if (microBatch < 0)
    return emitError() << "an action's micro-batch is non-negative, but is "
                       << microBatch;
  return success();
}

LogicalResult StreamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StreamKind kind, unsigned index) {
  // One compute stream: every pass, the schedule verifier and the plan
  // give stream index 0 to it, so another would be taken for it.
  if (kind == StreamKind::Compute && index != 0)
    return emitError()
           << "braid has one compute stream, #braid.stream<compute, "
              "0>; there is no compute stream "
           << index;
  if (kind == StreamKind::Comm && index >= kMaxCommStreams)
    return emitError() << "communication stream " << index
                       << " is out of range: a step has at most "
                       << kMaxCommStreams
                       << " (#braid.stream<comm, 0> to <comm, "
                       << kMaxCommStreams - 1 << ">)";
  return success();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<shard::GridAxesAttr> splitAxes,
                                   ArrayRef<int16_t> partialAxes,
                                   shard::ReductionKind partialType,
                                   ArrayRef<int64_t> blocks) {
  SmallVector<int16_t> seen;
  int64_t splitDims = 0;
  for (shard::GridAxesAttr axes : splitAxes) {
    splitDims += !axes.empty();
    llvm::append_range(seen, axes.asArrayRef());
  }
  llvm::append_range(seen, partialAxes);
  bool oneAxis = llvm::is_contained(seen, kTensorParallelAxis);
  for (auto [i, axis] : llvm::enumerate(seen)) {
    if (axis < kTensorParallelAxis)
      return emitError() << "a grid axis is non-negative, not " << axis;
    if (oneAxis && axis != kTensorParallelAxis)
      return emitError() << "a sharding names grid axes or is one of the "
                            "one-axis forms (over the tensor-parallel axis), "
                            "not both";
    if (llvm::is_contained(ArrayRef(seen).take_front(i), axis))
      return emitError() << (axis == kTensorParallelAxis
                                 ? std::string("the tensor-parallel axis")
                                 : "grid axis " + std::to_string(axis))
                         << " appears twice in a sharding";
  }
  if (partialType != shard::ReductionKind::Sum)
    return emitError() << "braid's partial values are sums, not '"
                       << shard::stringifyReductionKind(partialType) << "'";
  if (!blocks.empty() && splitDims != 1)
    return emitError() << "sharding blocks divide the one split dimension, "
                          "but "
                       << splitDims << " dimensions are split";
  for (int64_t b : blocks)
    if (b <= 0)
      return emitError() << "sharding blocks must be positive, not " << b;
  return success();
}

/// `[a, b, ...]` of integers into `out`.
static ParseResult parseIntList(AsmParser &parser,
                                SmallVectorImpl<int64_t> &out) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    return parser.parseInteger(out.emplace_back());
  });
}

static ParseResult parseGridAxes(AsmParser &parser,
                                 SmallVectorImpl<int16_t> &out) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    return parser.parseInteger(out.emplace_back());
  });
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  // `<replicated>`, `<partial>`, `<split D>`, `<split D blocks [b, ...]>`,
  // or `<split_axes = [[a, ...], ...] (blocks [b, ...])?
  //      (, partial = sum [a, ...])?>`.
  MLIRContext *context = parser.getContext();
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  SmallVector<SmallVector<int16_t>> splitAxes;
  SmallVector<int16_t> partialAxes;
  SmallVector<int64_t> blocks;
  shard::ReductionKind partialType = shard::ReductionKind::Sum;
  if (keyword == "split_axes") {
    if (parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
          return parseGridAxes(parser, splitAxes.emplace_back());
        }))
      return {};
    if (succeeded(parser.parseOptionalKeyword("blocks")) &&
        parseIntList(parser, blocks))
      return {};
    if (succeeded(parser.parseOptionalComma())) {
      StringRef kind;
      SMLoc kindLoc;
      if (parser.parseKeyword("partial") || parser.parseEqual() ||
          (kindLoc = parser.getCurrentLocation(), parser.parseKeyword(&kind)))
        return {};
      std::optional<shard::ReductionKind> parsed =
          shard::symbolizeReductionKind(kind);
      if (!parsed) {
        parser.emitError(kindLoc)
            << "expected a reduction kind, not '" << kind << "'";
        return {};
      }
      partialType = *parsed;
      if (parseGridAxes(parser, partialAxes))
        return {};
    }
  } else {
    std::optional<ShardingKind> kind = symbolizeShardingKind(keyword);
    if (!kind) {
      parser.emitError(loc) << "expected 'replicated', 'split', 'partial' or "
                               "'split_axes', not '"
                            << keyword << "'";
      return {};
    }
    if (*kind == ShardingKind::Partial)
      partialAxes.push_back(kTensorParallelAxis);
    if (*kind == ShardingKind::Split) {
      int64_t dim;
      SMLoc dimLoc = parser.getCurrentLocation();
      if (parser.parseInteger(dim))
        return {};
      if (dim < 0) {
        parser.emitError(dimLoc) << "a split sharding needs a dimension of 0 "
                                    "or more, not "
                                 << dim;
        return {};
      }
      splitAxes.resize(dim + 1);
      splitAxes[dim].push_back(kTensorParallelAxis);
      if (succeeded(parser.parseOptionalKeyword("blocks")) &&
          parseIntList(parser, blocks))
        return {};
    }
  }
  if (parser.parseGreater())
    return {};
  while (!splitAxes.empty() && splitAxes.back().empty())
    splitAxes.pop_back();
  SmallVector<shard::GridAxesAttr> axes;
  for (ArrayRef<int16_t> a : splitAxes)
    axes.push_back(shard::GridAxesAttr::get(context, a));
  return parser.getChecked<ShardingAttr>(loc, context, axes, partialAxes,
                                         partialType, blocks);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << str() << ">";
}

static std::string joined(ArrayRef<int64_t> values) {
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s + "]";
}

std::string ShardingAttr::str() const {
  std::string s;
  auto blocks = [&] {
    if (!getBlocks().empty())
      s += " blocks " + joined(getBlocks());
  };
  if (!hasGridAxes()) {
    s = stringifyShardingKind(getKind()).str();
    if (isSplit()) {
      s += " " + std::to_string(getDim());
      blocks();
    }
    return s;
  }
  s = "split_axes = [";
  for (auto [i, axes] : llvm::enumerate(getSplitAxes()))
    s += (i ? ", " : "") +
         joined(llvm::to_vector_of<int64_t>(axes.asArrayRef()));
  s += "]";
  blocks();
  if (!getPartialAxes().empty())
    s +=
        ", partial = " + shard::stringifyReductionKind(getPartialType()).str() +
        " " + joined(llvm::to_vector_of<int64_t>(getPartialAxes()));
  return s;
}

ShardingAttr ShardingAttr::getOnAxes(MLIRContext *context,
                                     ArrayRef<SmallVector<int16_t>> splitAxes,
                                     ArrayRef<int16_t> partialAxes,
                                     ArrayRef<int64_t> blocks) {
  // One block is the whole dimension: spelled without blocks.
  if (blocks.size() == 1)
    blocks = {};
  while (!splitAxes.empty() && splitAxes.back().empty())
    splitAxes = splitAxes.drop_back();
  SmallVector<shard::GridAxesAttr> axes;
  for (ArrayRef<int16_t> a : splitAxes)
    axes.push_back(shard::GridAxesAttr::get(context, a));
  return get(context, axes, partialAxes, shard::ReductionKind::Sum, blocks);
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *context) {
  return getOnAxes(context, {});
}

ShardingAttr ShardingAttr::getPartial(MLIRContext *context) {
  return getOnAxes(context, {}, {kTensorParallelAxis});
}

ShardingAttr ShardingAttr::getSplit(MLIRContext *context, int64_t dim,
                                    ArrayRef<int64_t> blocks) {
  SmallVector<SmallVector<int16_t>> axes(dim + 1);
  axes[dim].push_back(kTensorParallelAxis);
  return getOnAxes(context, axes, {}, blocks);
}

bool ShardingAttr::hasGridAxes() const {
  SmallVector<int16_t> all = getAllAxes();
  return !all.empty() && !llvm::is_contained(all, kTensorParallelAxis);
}

ArrayRef<int16_t> ShardingAttr::getAxesOf(int64_t d) const {
  if (d < 0 || d >= int64_t(getSplitAxes().size()))
    return {};
  return getSplitAxes()[d].asArrayRef();
}

SmallVector<int16_t> ShardingAttr::getAllAxes() const {
  SmallVector<int16_t> all;
  for (shard::GridAxesAttr axes : getSplitAxes())
    llvm::append_range(all, axes.asArrayRef());
  llvm::append_range(all, getPartialAxes());
  return all;
}

ShardingAttr ShardingAttr::onAxis(int16_t axis) const {
  if (!hasGridAxes())
    return *this;
  if (llvm::is_contained(getPartialAxes(), axis))
    return getPartial(getContext());
  for (auto [d, axes] : llvm::enumerate(getSplitAxes()))
    if (llvm::is_contained(axes.asArrayRef(), axis))
      return getSplit(getContext(), int64_t(d), getBlocks());
  return getReplicated(getContext());
}

ShardingKind ShardingAttr::getKind() const {
  if (llvm::is_contained(getPartialAxes(), kTensorParallelAxis))
    return ShardingKind::Partial;
  return getDim() >= 0 ? ShardingKind::Split : ShardingKind::Replicated;
}

int64_t ShardingAttr::getDim() const {
  for (auto [d, axes] : llvm::enumerate(getSplitAxes()))
    if (llvm::is_contained(axes.asArrayRef(), kTensorParallelAxis))
      return int64_t(d);
  return -1;
}

ShardingAttr ShardingAttr::withDim(int64_t d) const {
  return getSplit(getContext(), d, getBlocks());
}

SmallVector<int64_t>
ShardingAttr::getBlockSizes(ArrayRef<int64_t> shape) const {
  if (!getBlocks().empty())
    return llvm::to_vector(getBlocks());
  return {shape[getDim()]};
}

void BraidDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "braid/Dialect/Braid/BraidAttributes.cpp.inc"
      >();
}
