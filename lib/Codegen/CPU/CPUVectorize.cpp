//===- CPUVectorize.cpp - register tiles and vectors for the CPU ----------===//
//
// Chooses a schedule per bufferized linalg op (recorded as an attribute, so
// it is visible in the IR) and applies a transform-dialect schedule that
// implements them: register-tiled FMA micro-kernels for the chunk matmuls,
// row-wise vectors for element-wise ops.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/CPU/Passes.h"

#include "KeyBlockScores.h"
#include "KeyPartSums.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCPUVECTORIZEPASS
#include "gdn/Codegen/CPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr StringLiteral kScheduleAttr = "gdn.cpu_schedule";

/// The transform schedule; @TILE_M@ and @TILE_N@ are the matmul register
/// tile.
constexpr StringLiteral kSchedule = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(
      %root: !transform.any_op {transform.consumed}) {
    %mm = transform.structured.match ops{["linalg.matmul"]}
        attributes {gdn.cpu_schedule = "matmul"} in %root
        : (!transform.any_op) -> !transform.any_op
    %mt, %m0, %m1, %m2 = transform.structured.tile_using_for %mm
        tile_sizes [@TILE_M@, @TILE_N@, 1] interchange = [1, 0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.structured.vectorize %mt {create_named_contraction}
        : !transform.any_op
    %vm128 = transform.structured.match ops{["linalg.vecmat"]}
        attributes {gdn.cpu_schedule = "vecmat128"} in %root
        : (!transform.any_op) -> !transform.any_op
    %vt128, %v128a, %v128b = transform.structured.tile_using_for %vm128
        tile_sizes [128, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %vt128 {create_named_contraction}
        : !transform.any_op
    %vm64 = transform.structured.match ops{["linalg.vecmat"]}
        attributes {gdn.cpu_schedule = "vecmat64"} in %root
        : (!transform.any_op) -> !transform.any_op
    %vt64, %v64a, %v64b = transform.structured.tile_using_for %vm64
        tile_sizes [64, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %vt64 {create_named_contraction}
        : !transform.any_op
    %vm32 = transform.structured.match ops{["linalg.vecmat"]}
        attributes {gdn.cpu_schedule = "vecmat32"} in %root
        : (!transform.any_op) -> !transform.any_op
    %vt32, %v32a, %v32b = transform.structured.tile_using_for %vm32
        tile_sizes [32, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %vt32 {create_named_contraction}
        : !transform.any_op
    %vm16 = transform.structured.match ops{["linalg.vecmat"]}
        attributes {gdn.cpu_schedule = "vecmat16"} in %root
        : (!transform.any_op) -> !transform.any_op
    %vt16, %v16a, %v16b = transform.structured.tile_using_for %vm16
        tile_sizes [16, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %vt16 {create_named_contraction}
        : !transform.any_op
    %rows = transform.structured.match
        attributes {gdn.cpu_schedule = "rows"} in %root
        : (!transform.any_op) -> !transform.any_op
    %rt, %r0 = transform.structured.tile_using_for %rows tile_sizes [1, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %rt : !transform.any_op
    %pieces = transform.structured.match
        attributes {gdn.cpu_schedule = "row-pieces"} in %root
        : (!transform.any_op) -> !transform.any_op
    %pt, %p0, %p1 = transform.structured.tile_using_for %pieces
        tile_sizes [1, 512]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %pt : !transform.any_op
    %whole = transform.structured.match
        attributes {gdn.cpu_schedule = "whole"} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %whole : !transform.any_op
    %tr = transform.structured.match
        attributes {gdn.cpu_schedule = "transpose"} in %root
        : (!transform.any_op) -> !transform.any_op
    %tt, %t0, %t1 = transform.structured.tile_using_for %tr
        tile_sizes [16, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.structured.vectorize %tt : !transform.any_op

@INNERMOST@
    transform.apply_patterns to %root {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %root : !transform.any_op
    %hoisted = transform.structured.hoist_redundant_vector_transfers %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction
          lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction
          lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.transfer_to_scf
          max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_transpose
          lowering_strategy = "shuffle_16x16"
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    transform.yield
  }
}
)mlir";

void replaceAll(std::string &text, StringRef from, StringRef to) {
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to.str());
}

/// The lowest and highest loop counts of the `innermostN` schedules.
constexpr int64_t kInnermostMinLoops = 3;
constexpr int64_t kInnermostMaxLoops = 6;

/// The `innermostN` and `innermost-loopsN` schedules, one of each per loop
/// count N: the innermost loop (static) vectorized whole, the loop outside
/// it an scf.for, and the leading N - 2 loops one iteration per scf.forall
/// task (`innermostN`) or scf.for loops too (`innermost-loopsN`).
std::string innermostSchedules() {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t loops = kInnermostMinLoops; loops <= kInnermostMaxLoops;
       ++loops) {
    SmallVector<StringRef> ones(loops - 2, "1"), zeros(loops - 2, "0");
    zeros.push_back("1");
    SmallVector<StringRef> allOnes(loops - 1, "1");
    os << llvm::formatv(R"mlir(
    %in{0} = transform.structured.match
        attributes {{gdn.cpu_schedule = "innermost{0}"} in %root
        : (!transform.any_op) -> !transform.any_op
    %in{0}t, %in{0}f = transform.structured.tile_using_forall %in{0}
        tile_sizes [{1}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %in{0}s, %in{0}l = transform.structured.tile_using_for %in{0}t
        tile_sizes [{2}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %in{0}s : !transform.any_op
    %il{0} = transform.structured.match
        attributes {{gdn.cpu_schedule = "innermost-loops{0}"} in %root
        : (!transform.any_op) -> !transform.any_op
    %il{0}s, %il{0}l:{4} = transform.structured.tile_using_for %il{0}
        tile_sizes [{3}]
        : (!transform.any_op) -> ({5})
    transform.structured.vectorize %il{0}s : !transform.any_op
)mlir",
                        loops, llvm::join(ones, ", "), llvm::join(zeros, ", "),
                        llvm::join(allOnes, ", "), loops - 1,
                        llvm::join(SmallVector<StringRef>(
                                       loops, "!transform.any_op"),
                                   ", "));
  }
  return text;
}

/// The lowest and highest loop counts of the `piecesN` schedules.
constexpr int64_t kPiecesMinLoops = 2;
constexpr int64_t kPiecesMaxLoops = 6;
/// The vector width of a `piecesN` piece: one zmm register of f32.
constexpr int64_t kPieceLanes = 16;

/// The `piecesN` and `pieces-loopsN` schedules, one of each per loop count
/// N: the innermost loop (dynamic) in pieces of kPieceLanes, each piece one
/// vector, the last partial piece peeled off and left to loops; the
/// leading N - 1 loops one iteration per scf.forall task (`piecesN`) or
/// scf.for loops (`pieces-loopsN`). The peeled main loop is canonicalized
/// before it is vectorized, so that its pieces have the static shape the
/// vectorizer needs.
/// The end of a `piecesN` or `pieces-loopsN` schedule: `loop` (the loop of
/// pieces, as `handle`) peeled, its main part canonicalized and the pieces
/// (the ops marked `schedule`) in it vectorized.
std::string peelAndVectorize(StringRef handle, StringRef loop,
                             StringRef schedule) {
  return llvm::formatv(R"mlir(
    {0}c = transform.cast {1}
        : !transform.any_op to !transform.op<"scf.for">
    {0}m, {0}r = transform.loop.peel {0}c
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.apply_patterns to {0}m {{
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.foreach {0}m : !transform.any_op {{
    ^bb0(%main: !transform.any_op):
      %piece = transform.structured.match
          attributes {{gdn.cpu_schedule = "{2}"} in %main
          : (!transform.any_op) -> !transform.any_op
      transform.structured.vectorize %piece : !transform.any_op
    }
)mlir",
                       handle, loop, schedule)
      .str();
}

std::string piecesSchedules() {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t loops = kPiecesMinLoops; loops <= kPiecesMaxLoops; ++loops) {
    SmallVector<StringRef> ones(loops - 1, "1"), zeros(loops - 1, "0");
    ones.push_back("0");
    std::string lanes = std::to_string(kPieceLanes);
    zeros.push_back(lanes);
    SmallVector<StringRef> serial(loops - 1, "1");
    serial.push_back(lanes);
    std::string tasks = llvm::formatv("pieces{0}", loops).str();
    std::string inLoops = llvm::formatv("pieces-loops{0}", loops).str();
    os << llvm::formatv(R"mlir(
    %pc{0} = transform.structured.match
        attributes {{gdn.cpu_schedule = "{1}"} in %root
        : (!transform.any_op) -> !transform.any_op
    %pc{0}t, %pc{0}f = transform.structured.tile_using_forall %pc{0}
        tile_sizes [{2}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %pc{0}s, %pc{0}l = transform.structured.tile_using_for %pc{0}t
        tile_sizes [{3}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
)mlir",
                        loops, tasks, llvm::join(ones, ", "),
                        llvm::join(zeros, ", "));
    os << peelAndVectorize(llvm::formatv("%pc{0}", loops).str(),
                           llvm::formatv("%pc{0}l", loops).str(), tasks);
    os << llvm::formatv(R"mlir(
    %pl{0} = transform.structured.match
        attributes {{gdn.cpu_schedule = "{1}"} in %root
        : (!transform.any_op) -> !transform.any_op
    %pl{0}s, %pl{0}l:{2} = transform.structured.tile_using_for %pl{0}
        tile_sizes [{3}]
        : (!transform.any_op) -> ({4})
)mlir",
                        loops, inLoops, loops, llvm::join(serial, ", "),
                        llvm::join(SmallVector<StringRef>(
                                       loops + 1, "!transform.any_op"),
                                   ", "));
    os << peelAndVectorize(llvm::formatv("%pl{0}", loops).str(),
                           llvm::formatv("%pl{0}l#{1}", loops, loops - 1).str(),
                           inLoops);
  }
  return text;
}

/// The `head-sumsN` schedules (N = kInnermostMinLoops + 1 to
/// kInnermostMaxLoops): sums over the keys (loop N - 3) of rows that every
/// head (loop N - 2) weighs differently, the leading loops and the keys as
/// scf.for loops, the heads and the innermost loop one 2-D vector, so that
/// a cached row is loaded once for all heads and the sums stay in
/// registers across the keys.
std::string headSumsSchedules() {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t loops = kInnermostMinLoops + 1; loops <= kInnermostMaxLoops;
       ++loops) {
    SmallVector<StringRef> sizes(loops - 2, "1");
    sizes.append({"0", "0"});
    os << llvm::formatv(R"mlir(
    %hs{0} = transform.structured.match
        attributes {{gdn.cpu_schedule = "head-sums{0}"} in %root
        : (!transform.any_op) -> !transform.any_op
    %hs{0}s, %hs{0}l:{2} = transform.structured.tile_using_for %hs{0}
        tile_sizes [{1}]
        : (!transform.any_op) -> ({3})
    transform.structured.vectorize %hs{0}s : !transform.any_op
)mlir",
                        loops, llvm::join(sizes, ", "), loops - 2,
                        llvm::join(SmallVector<StringRef>(
                                       loops - 1, "!transform.any_op"),
                                   ", "));
  }
  return text;
}

bool hasStaticDomain(linalg::LinalgOp op) {
  return llvm::none_of(op.getStaticLoopRanges(), ShapedType::isDynamic);
}

bool isAllParallel(linalg::LinalgOp op) {
  return op.getNumReductionLoops() == 0;
}

/// Whether an input of the 2-D `op` is indexed (d1, d0).
bool readsTransposed(linalg::LinalgOp op) {
  AffineMap swapped = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0},
                                                   op->getContext());
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    return op.getMatchingIndexingMap(input) == swapped;
  });
}

/// Rows longer than this are vectorized in pieces of kRowPiece elements.
constexpr int64_t kWidestRow = 4096;
constexpr int64_t kRowPiece = 512;

/// Whether the linalg vectorizer takes `generic`'s body as it stands:
/// element-wise arith and math ops (and linalg.index), each output updated
/// by one combiner of a kind that vector reductions have, or, with
/// `plainWrites`, written without being read (an element-wise result).
/// Claiming an op whose body it rejects would fail the whole transform
/// schedule.
bool hasVectorizableBody(linalg::GenericOp generic, bool plainWrites = false) {
  Block &body = generic.getRegion().front();
  for (Operation &bodyOp : body.without_terminator())
    if (!isa<linalg::IndexOp>(bodyOp) &&
        !(OpTrait::hasElementwiseMappableTraits(&bodyOp) &&
          isa<arith::ArithDialect, math::MathDialect>(bodyOp.getDialect())))
      return false;
  SmallVector<BlockArgument> outputs(generic.getRegionOutputArgs());
  for (unsigned position = 0; position < outputs.size(); ++position) {
    if (plainWrites && outputs[position].use_empty())
      continue;
    SmallVector<Operation *> combiners;
    if (!matchReduction(outputs, position, combiners) ||
        combiners.size() != 1 ||
        !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp,
             arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
             arith::AddIOp, arith::MulIOp, arith::MaxSIOp, arith::MinSIOp,
             arith::MaxUIOp, arith::MinUIOp, arith::AndIOp, arith::OrIOp,
             arith::XOrIOp>(combiners.front()))
      return false;
  }
  return true;
}

/// Whether `op` is a generic of kInnermostMinLoops to kInnermostMaxLoops
/// loops that vectorizes along its innermost loop: that loop static (a
/// multiple of 16, up to kWidestRow), contiguous in every operand that it
/// indexes, and the one reduction either that loop (dot products, as the
/// attention scores over a latent are) or the one before it (running sums
/// of vectors, as the attended latents over the keys are). The other loops
/// may be dynamic (the keys of a cache).
bool vectorizesInnermost(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  int64_t loops = op.getNumLoops();
  if (!generic || !op.hasPureBufferSemantics() ||
      loops < kInnermostMinLoops || loops > kInnermostMaxLoops ||
      op.getNumReductionLoops() != 1)
    return false;
  int64_t width = op.getStaticLoopRanges().back();
  if (ShapedType::isDynamic(width) || width % 16 != 0 || width > kWidestRow)
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators[loops - 1] != utils::IteratorType::reduction &&
      iterators[loops - 2] != utils::IteratorType::reduction)
    return false;
  // Every output is written once per parallel iteration: a parallel loop
  // missing from its map would make the tasks race on it, or the vector
  // form keep one lane of it.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (int64_t dim = 0; dim < loops; ++dim)
      if (iterators[dim] == utils::IteratorType::parallel &&
          !map.isFunctionOfDim(dim))
        return false;
  }
  if (!hasVectorizableBody(generic))
    return false;
  return llvm::all_of(op->getOpOperands(), [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation())
      return false;
    if (!map.isFunctionOfDim(loops - 1))
      return true;
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    return type && map.getNumResults() > 0 &&
           map.getResults().back() == getAffineDimExpr(loops - 1,
                                                       op->getContext()) &&
           type.isLastDimUnitStride();
  });
}

/// Whether `op` is a generic of kPiecesMinLoops to kPiecesMaxLoops loops
/// whose innermost loop is dynamic (the keys of a cache: scores masked,
/// scaled, exponentiated, normalized) and either parallel like every other
/// loop or the one reduction (a row's maximum or sum), contiguous in every
/// operand that it indexes: it vectorizes in pieces along that loop.
bool vectorizesInPieces(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  int64_t loops = op.getNumLoops();
  if (!generic || !op.hasPureBufferSemantics() || loops < kPiecesMinLoops ||
      loops > kPiecesMaxLoops || op.getNumReductionLoops() > 1 ||
      !ShapedType::isDynamic(op.getStaticLoopRanges().back()))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int64_t dim = 0; dim + 1 < loops; ++dim)
    if (iterators[dim] != utils::IteratorType::parallel)
      return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (int64_t dim = 0; dim < loops; ++dim)
      if (iterators[dim] == utils::IteratorType::parallel &&
          !map.isFunctionOfDim(dim))
        return false;
  }
  if (!hasVectorizableBody(generic, /*plainWrites=*/true))
    return false;
  return llvm::all_of(op->getOpOperands(), [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation())
      return false;
    if (!map.isFunctionOfDim(loops - 1))
      return true;
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    return type && map.getResults().back() ==
                       getAffineDimExpr(loops - 1, op->getContext()) &&
           type.isLastDimUnitStride();
  });
}

/// Whether a `piecesN` op is worth a task per leading iteration: a static
/// leading loop of more than one iteration (heads), and no task around it
/// already (the blocks of a blocked attention), which would nest parallel
/// regions.
bool hasPiecesTasks(linalg::LinalgOp op) {
  if (op->getParentOfType<scf::ForallOp>())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return llvm::any_of(ArrayRef(ranges).drop_back(), [](int64_t range) {
    return !ShapedType::isDynamic(range) && range > 1;
  });
}

/// Whether an `innermostN` op is worth a task per leading iteration: a
/// static leading loop of more than one iteration gives tasks whatever the
/// dynamic sizes are (the heads of an attention), and the loop that each
/// task runs is dynamic (the keys of a cache), so that a task is not a
/// single short vector; a decode step's norms (one token, a reduction over
/// a static width) would be parallel regions of one tiny task each.
bool hasInnermostTasks(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t loops = ranges.size();
  bool staticTasks = llvm::any_of(
      ArrayRef<int64_t>(ranges).take_front(loops - 2),
      [](int64_t range) { return !ShapedType::isDynamic(range) && range > 1; });
  return staticTasks && ShapedType::isDynamic(ranges[loops - 2]);
}

/// The most f32 lanes of the sums a `head-sumsN` op carries across its keys.
constexpr int64_t kHeadSumsLanes = 256;

/// For an `innermostN` op whose loop outside the innermost is dynamic (the
/// keys of a cache), the loop order that reads the key operand once: the
/// static leading loops of more than one iteration that an input indexed
/// by the keys does not index (heads sharing the cached latents) moved just
/// inside the key loop, as an interchange vector (new loop i is old loop
/// result[i]). Dot products over the innermost loop (scores) may move any
/// number of such loops; sums over the keys (attended latents), whose head
/// loop and innermost loop become one 2-D vector of at most kHeadSumsLanes,
/// exactly one. Empty when no such loop exists.
SmallVector<unsigned> keysOutsideHeads(linalg::LinalgOp op) {
  int64_t loops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t keys = loops - 2;
  if (!vectorizesInnermost(op) || op->getParentOfType<scf::ForallOp>() ||
      !ShapedType::isDynamic(ranges[keys]))
    return {};
  bool sums = iterators[keys] == utils::IteratorType::reduction;
  SmallVector<unsigned> heads, others;
  for (int64_t dim = 0; dim < keys; ++dim) {
    bool shared = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
      AffineMap map = op.getMatchingIndexingMap(in);
      return map.isFunctionOfDim(keys) && !map.isFunctionOfDim(dim);
    });
    bool isHead = !ShapedType::isDynamic(ranges[dim]) && ranges[dim] > 1;
    (shared && isHead ? heads : others).push_back(dim);
  }
  // The sums of every head stay in registers across the keys: at most
  // kHeadSumsLanes of them (half of the 32 zmm registers).
  if (heads.empty() ||
      (sums && (heads.size() != 1 ||
                ranges[heads.front()] * ranges.back() > kHeadSumsLanes)))
    return {};
  SmallVector<unsigned> order = others;
  order.push_back(keys);
  llvm::append_range(order, heads);
  order.push_back(loops - 1);
  return order;
}

/// Whether a `keys-outside-heads` op sums over its keys (rather than taking
/// dot products along its innermost loop).
bool sumsOverKeys(linalg::LinalgOp op) {
  return op.getIteratorTypesArray()[op.getNumLoops() - 2] ==
         utils::IteratorType::reduction;
}

/// The schedule for `op`, or an empty string to leave it to loops.
StringRef chooseSchedule(linalg::LinalgOp op, int64_t tileM, int64_t tileN) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      generic && isKeyBlockScores(generic))
    return "key-blocks5";
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      generic && !op->getParentOfType<scf::ForallOp>() &&
      isKeyPartSums(generic, kHeadSumsLanes))
    return "key-parts5";
  if (!keysOutsideHeads(op).empty()) {
    static const std::array<StringRef, 4> dots = {
        "keys-outside-heads3", "keys-outside-heads4", "keys-outside-heads5",
        "keys-outside-heads6"};
    static const std::array<StringRef, 4> sums = {
        "", "keys-outside-head-sums4", "keys-outside-head-sums5",
        "keys-outside-head-sums6"};
    size_t index = op.getNumLoops() - kInnermostMinLoops;
    return sumsOverKeys(op) ? sums[index] : dots[index];
  }
  if (vectorizesInnermost(op)) {
    static const std::array<StringRef, 4> parallel = {
        "innermost3", "innermost4", "innermost5", "innermost6"};
    static const std::array<StringRef, 4> serial = {
        "innermost-loops3", "innermost-loops4", "innermost-loops5",
        "innermost-loops6"};
    static_assert(parallel.size() ==
                          kInnermostMaxLoops - kInnermostMinLoops + 1 &&
                      serial.size() == parallel.size(),
                  "a name per loop count");
    size_t index = op.getNumLoops() - kInnermostMinLoops;
    return hasInnermostTasks(op) ? parallel[index] : serial[index];
  }
  if (vectorizesInPieces(op)) {
    static const std::array<StringRef, 5> parallel = {
        "pieces2", "pieces3", "pieces4", "pieces5", "pieces6"};
    static const std::array<StringRef, 5> serial = {
        "pieces-loops2", "pieces-loops3", "pieces-loops4", "pieces-loops5",
        "pieces-loops6"};
    static_assert(parallel.size() == kPiecesMaxLoops - kPiecesMinLoops + 1 &&
                      serial.size() == parallel.size(),
                  "a name per loop count");
    size_t index = op.getNumLoops() - kPiecesMinLoops;
    return hasPiecesTasks(op) ? parallel[index] : serial[index];
  }
  if (!op.hasPureBufferSemantics() || !hasStaticDomain(op))
    return "";
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (isa<linalg::MatmulOp>(op))
    return ranges[0] % tileM == 0 && ranges[1] % tileN == 0 ? "matmul" : "";
  // A vec-mat is one row: its accumulators are independent vectors across
  // the output, so the widest tile that divides N (up to 8 zmm registers)
  // hides the FMA latency along K.
  if (isa<linalg::VecmatOp>(op)) {
    for (int64_t width : {128, 64, 32, 16})
      if (ranges[0] % width == 0)
        return width == 128 ? "vecmat128"
               : width == 64 ? "vecmat64"
               : width == 32 ? "vecmat32"
                             : "vecmat16";
    return "";
  }
  if (isa<linalg::TransposeOp>(op))
    return ranges.size() == 2 && ranges[0] % 16 == 0 && ranges[1] % 16 == 0
               ? "transpose"
               : "";
  if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op) ||
      !isAllParallel(op))
    return "";
  // A generic that reads an operand transposed (a bf16 weight widened as
  // it is transposed, say) is a transpose: rows of it would be columns of
  // the input, gathered element by element and unrolled over the row.
  if (ranges.size() == 2 && readsTransposed(op))
    return ranges[0] % 16 == 0 && ranges[1] % 16 == 0 ? "transpose" : "";
  // A row is one vector, unrolled into registers: up to kWidestRow
  // elements; wider rows (a vocabulary) go in 512-element pieces, so that
  // the code stays the size of one piece.
  if (ranges.size() == 2 && ranges[1] % 16 == 0 && ranges[1] <= kWidestRow)
    return "rows";
  if (ranges.size() == 2 && ranges[1] % kRowPiece == 0)
    return "row-pieces";
  if (ranges.size() == 1 && ranges[0] % 16 == 0 && ranges[0] <= 512)
    return "whole";
  return "";
}

struct GdnCPUVectorizePass
    : gdn::impl::GdnCPUVectorizePassBase<GdnCPUVectorizePass> {
  using Base::Base;

  /// The schedule for this pass's tile sizes, parsed once per pipeline
  /// rather than once per function (copies of the pass share it).
  LogicalResult initialize(MLIRContext *context) override {
    // Bad tile sizes are reported by runOnOperation, at the function.
    if (llvm::Error error = checkCPUVectorizeOptions(currentOptions())) {
      llvm::consumeError(std::move(error));
      return success();
    }
    std::string text = kSchedule.str();
    replaceAll(text, "@TILE_M@", std::to_string(matmulTileM));
    replaceAll(text, "@TILE_N@", std::to_string(matmulTileN));
    replaceAll(text, "@INNERMOST@",
               innermostSchedules() + piecesSchedules() +
                   headSumsSchedules());
    auto parsed = std::make_shared<OwningOpRef<ModuleOp>>(
        parseSourceString<ModuleOp>(text, context));
    if (!*parsed)
      return emitError(UnknownLoc::get(context))
             << "gdn-cpu-vectorize: the built-in schedule does not parse";
    schedule = std::move(parsed);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (llvm::Error error = checkCPUVectorizeOptions(currentOptions())) {
      func.emitError() << "gdn-cpu-vectorize: "
                       << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    Builder builder(&getContext());
    bool any = false;
    func.walk([&](linalg::LinalgOp op) {
      StringRef schedule = chooseSchedule(op, matmulTileM, matmulTileN);
      if (schedule.empty())
        return;
      op->setAttr(kScheduleAttr, builder.getStringAttr(schedule));
      any = true;
    });

    if (annotateOnly)
      return;
    if (failed(scoresInKeyBlocks(func)) || failed(sumsInKeyParts(func)) ||
        failed(putKeysOutsideHeads(func)))
      return signalPassFailure();
    if (any) {
      ModuleOp scheduleModule = **schedule;
      Operation *entry = transform::detail::findTransformEntryPoint(
          scheduleModule, scheduleModule,
          transform::TransformDialect::kTransformEntryPointSymbolName);
      if (!entry ||
          failed(transform::applyTransformNamedSequence(
              func, entry, scheduleModule, transform::TransformOptions())))
        return signalPassFailure();
    }

    // exp in vector form: a polynomial instead of a libm call per lane.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == "exp" || name == "math.exp";
    });
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
  }

private:
  /// The generics of `func` whose recorded schedule satisfies `wanted`.
  static SmallVector<linalg::GenericOp>
  withSchedule(func::FuncOp func, function_ref<bool(StringRef)> wanted) {
    SmallVector<linalg::GenericOp> ops;
    func.walk([&](linalg::GenericOp op) {
      auto schedule = op->getAttrOfType<StringAttr>(kScheduleAttr);
      if (schedule && wanted(schedule.getValue()))
        ops.push_back(op);
    });
    return ops;
  }

  /// Interchanges the loops of `op` as keysOutsideHeads says and records
  /// `schedule` on the result.
  static LogicalResult headsInsideKeys(RewriterBase &rewriter,
                                       linalg::GenericOp op,
                                       StringRef schedule) {
    SmallVector<unsigned> order = keysOutsideHeads(op);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> interchanged = failure();
    if (!order.empty())
      interchanged = linalg::interchangeGenericOp(rewriter, op, order);
    if (failed(interchanged))
      return op.emitError("gdn-cpu-vectorize: cannot put the heads inside "
                          "the loop over the keys");
    (*interchanged)->setAttr(kScheduleAttr, rewriter.getStringAttr(schedule));
    return success();
  }

  /// Lowers the `key-blocks5` ops (KeyBlockScores.h); the keys past their
  /// last whole block (at most 15: too few for tasks) run with the heads
  /// inside them on loops, `innermost-loops5`.
  LogicalResult scoresInKeyBlocks(func::FuncOp func) {
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op :
         withSchedule(func, [](StringRef s) { return s == "key-blocks5"; })) {
      FailureOr<linalg::GenericOp> rest = lowerScoresInKeyBlocks(rewriter, op);
      if (failed(rest))
        return op.emitError("gdn-cpu-vectorize: not scores in key blocks");
      if (failed(headsInsideKeys(rewriter, *rest, "innermost-loops5")))
        return failure();
    }
    return success();
  }

  /// Lowers the `key-parts5` ops (KeyPartSums.h).
  LogicalResult sumsInKeyParts(func::FuncOp func) {
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op :
         withSchedule(func, [](StringRef s) { return s == "key-parts5"; }))
      if (failed(lowerSumsInKeyParts(rewriter, op)))
        return op.emitError("gdn-cpu-vectorize: not sums in key parts");
    return success();
  }

  /// Interchanges the loops of the `keys-outside-heads...N` ops, which then
  /// take the `innermostN` schedule (dot products: a task per key, every
  /// head inside it) or `head-sumsN` (sums over the keys).
  LogicalResult putKeysOutsideHeads(func::FuncOp func) {
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : withSchedule(func, [](StringRef s) {
           return s.starts_with("keys-outside-head");
         })) {
      std::string schedule = (sumsOverKeys(op) ? "head-sums" : "innermost") +
                             std::to_string(op.getNumLoops());
      if (failed(headsInsideKeys(rewriter, op, schedule)))
        return failure();
    }
    return success();
  }

  /// The pass options, in Passes.td order.
  GdnCPUVectorizePassOptions currentOptions() const {
    return {annotateOnly, matmulTileM, matmulTileN};
  }

  std::shared_ptr<OwningOpRef<ModuleOp>> schedule;
};
} // namespace

llvm::Error
mlir::gdn::checkCPUVectorizeOptions(const GdnCPUVectorizePassOptions &options) {
  if (options.matmulTileM < 1 || options.matmulTileN < 16 ||
      options.matmulTileN % 16 != 0)
    return llvm::createStringError(
        "matmul-tile-m must be positive and matmul-tile-n a multiple of 16, "
        "but got " +
        llvm::Twine(options.matmulTileM) + " and " +
        llvm::Twine(options.matmulTileN));
  return llvm::Error::success();
}
