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

LogicalResult
TensorParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           FlatSymbolRefAttr grid, int64_t axis) {
  if (!grid || axis < 0)
    return emitError() << "a tensor-parallel axis is a grid and a "
                          "non-negative axis, but is "
                       << grid << " and " << axis;
  return success();
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
                                   ShardingKind kind, int64_t dim,
                                   ArrayRef<int64_t> blocks) {
  if (kind == ShardingKind::Split && dim < 0)
    return emitError() << "a split sharding needs a dimension of 0 or more, "
                          "not "
                       << dim;
  for (int64_t b : blocks)
    if (b <= 0)
      return emitError() << "sharding blocks must be positive, not " << b;
  return success();
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  // `<replicated>`, `<partial>`, `<split D>`, `<split D blocks [b, ...]>`.
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<ShardingKind> kind = symbolizeShardingKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "expected 'replicated', 'split' or 'partial', "
                             "not '"
                          << keyword << "'";
    return {};
  }
  int64_t dim = -1;
  SmallVector<int64_t> blocks;
  if (*kind == ShardingKind::Split) {
    if (parser.parseInteger(dim))
      return {};
    if (succeeded(parser.parseOptionalKeyword("blocks"))) {
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
            return parser.parseInteger(blocks.emplace_back());
          }))
        return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(loc, parser.getContext(), *kind, dim,
                                         blocks);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << str() << ">";
}

std::string ShardingAttr::str() const {
  std::string s = stringifyShardingKind(getKind()).str();
  if (!isSplit())
    return s;
  s += " " + std::to_string(getDim());
  if (!getBlocks().empty()) {
    s += " blocks [";
    for (auto [i, b] : llvm::enumerate(getBlocks()))
      s += (i ? ", " : "") + std::to_string(b);
    s += "]";
  }
  return s;
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *context) {
  return get(context, ShardingKind::Replicated, -1, {});
}

ShardingAttr ShardingAttr::getPartial(MLIRContext *context) {
  return get(context, ShardingKind::Partial, -1, {});
}

ShardingAttr ShardingAttr::getSplit(MLIRContext *context, int64_t dim,
                                    ArrayRef<int64_t> blocks) {
  // One block is the whole dimension: spelled without blocks.
  if (blocks.size() == 1)
    blocks = {};
  return get(context, ShardingKind::Split, dim, blocks);
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
