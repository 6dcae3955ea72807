//===- MapParallelLoops.cpp - host buffer ops as grid-mapped loops --------===//
//
// After bufferization, what the layers decompose into besides the delta
// rule (projections, norms, gates, the convolution, attention, copies into
// slices) is linalg on buffers in host code. Each op becomes linalg's own
// parallel loop nest; its parallel dimensions are linearised into one
// index, the innermost dimension fastest, and split into blocks of
// `block-threads` threads, one thread per element: neighbouring threads
// write neighbouring elements. Reductions stay loops inside the thread,
// except a sum, maximum or minimum over a long last dimension (a
// projection's, a norm's, attention's softmax): each output element then
// gets a warp, whose lanes read consecutive elements along the reduction (a
// row of the weight matrix in one transaction, where one thread per output
// reads rows K elements apart) and combine their partial results with
// shuffles. The loops carry the mapping attributes that
// convert-parallel-loops-to-gpu turns into gpu.launch.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "BufferViews.h"
#include "Epilogues.h"
#include "WideLanes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUMAPPARALLELLOOPSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
bool isInKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

/// A generic whose reduction dimensions come before parallel ones (the
/// absorbed attention's sum over the keys, outside the loop over a
/// latent's channels) gets its loops interchanged, parallel ones first:
/// its parallel loops are then one nest around the reductions, which the
/// grid mapping needs.
linalg::LinalgOp parallelDimensionsFirst(RewriterBase &rewriter,
                                         linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return op;
  SmallVector<unsigned> order;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (auto [i, iterator] : llvm::enumerate(iterators))
    if (linalg::isParallelIterator(iterator))
      order.push_back(i);
  for (auto [i, iterator] : llvm::enumerate(iterators))
    if (!linalg::isParallelIterator(iterator))
      order.push_back(i);
  bool identity = llvm::all_of(llvm::enumerate(order), [](auto entry) {
    return entry.index() == entry.value();
  });
  if (identity)
    return op;
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  return succeeded(interchanged) ? linalg::LinalgOp(*interchanged) : op;
}

/// The op as loops in place; an op without parallel dimensions (a
/// zero-rank or all-reduction op) gets a one-iteration parallel loop around
/// it, so that it still runs on the device.
LogicalResult lowerToLoops(RewriterBase &rewriter, linalg::LinalgOp op) {
  op = parallelDimensionsFirst(rewriter, op);
  Location loc = op.getLoc();
  if (op.getNumParallelLoops() == 0 ||
      !linalg::isParallelIterator(op.getIteratorTypesArray().front())) {
    rewriter.setInsertionPoint(op);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto wrapper = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                           ValueRange{one}, ValueRange{one});
    rewriter.moveOpBefore(op, wrapper.getBody()->getTerminator());
  }
  rewriter.setInsertionPoint(op);
  if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
    return op->emitOpError("cannot be lowered to parallel loops for the GPU");
  rewriter.eraseOp(op);
  return success();
}

gpu::ParallelLoopDimMappingAttr mappingTo(Builder &b, gpu::Processor p) {
  return gpu::ParallelLoopDimMappingAttr::get(
      b.getContext(), p, b.getDimIdentityMap(), b.getDimIdentityMap());
}

/// Rewrites an outermost host-level loop into blocks x threads over its
/// linearised iteration space (see the file comment).
LogicalResult mapToGrid(RewriterBase &rewriter, scf::ParallelOp loop,
                        int64_t blockThreads) {
  if (loop.getNumResults() != 0)
    return loop.emitOpError("with reductions cannot be mapped to the GPU");
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto constant = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value zero = constant(0), one = constant(1);
  SmallVector<Value> tripCounts;
  Value total = one;
  for (auto [lb, ub, step] : llvm::zip_equal(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
    Value trips = arith::CeilDivUIOp::create(rewriter, loc, span, step);
    tripCounts.push_back(trips);
    total = arith::MulIOp::create(rewriter, loc, total, trips);
  }
  Value threadsPerBlock = constant(blockThreads);
  // No blocks for an empty loop (the copy of an MLA cache before the first
  // token, the attention form a call does not take): the runtime skips a
  // launch of no blocks, which the driver would reject.
  Value blocks =
      arith::CeilDivUIOp::create(rewriter, loc, total, threadsPerBlock);
  auto grid = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                      ValueRange{blocks}, ValueRange{one});
  rewriter.setInsertionPointToStart(grid.getBody());
  auto block =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                              ValueRange{threadsPerBlock}, ValueRange{one});
  rewriter.setInsertionPointToStart(block.getBody());
  Value linear = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, grid.getInductionVars()[0],
                            threadsPerBlock),
      block.getInductionVars()[0]);
  Value inRange = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ult, linear, total);
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
  rewriter.setInsertionPointToStart(guard.thenBlock());
  int64_t rank = tripCounts.size();
  SmallVector<Value> ivs(rank);
  Value rest = linear;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value k = rest;
    if (d > 0) {
      k = arith::RemUIOp::create(rewriter, loc, rest, tripCounts[d]);
      rest = arith::DivUIOp::create(rewriter, loc, rest, tripCounts[d]);
    }
    ivs[d] = arith::AddIOp::create(
        rewriter, loc, loop.getLowerBound()[d],
        arith::MulIOp::create(rewriter, loc, k, loop.getStep()[d]));
  }
  Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), ivs);
  rewriter.eraseOp(loop);

  if (failed(gpu::setMappingAttr(
          grid, mappingTo(rewriter, gpu::Processor::BlockX))) ||
      failed(gpu::setMappingAttr(block,
                                 mappingTo(rewriter, gpu::Processor::ThreadX))))
    return grid.emitOpError("cannot be mapped to the GPU");
  // Parallel loops inside the element (after a reduction dimension) run
  // sequentially in its thread.
  LogicalResult nested = success();
  guard.walk([&](scf::ParallelOp inner) {
    SmallVector<gpu::ParallelLoopDimMappingAttr> sequential(
        inner.getNumLoops(), mappingTo(rewriter, gpu::Processor::Sequential));
    if (failed(gpu::setMappingAttr(inner, sequential)))
      nested = inner.emitOpError("cannot be mapped to the GPU");
  });
  return nested;
}

constexpr int64_t kWarpSize = 32;

/// For a reduction over its last loop dimension of at least `minLength`
/// elements (or dynamic; a warp per output would idle on fewer), its
/// final combiner (finalCombinerOf); null otherwise.
Operation *warpCombinerOf(linalg::LinalgOp op, int64_t minLength) {
  if (op.getNumLoops() < 2 ||
      !linalg::isReductionIterator(op.getIteratorTypesArray().back()))
    return nullptr;
  int64_t length = op.getStaticLoopRanges().back();
  if (!ShapedType::isDynamic(length) && length < minLength)
    return nullptr;
  return finalCombinerOf(op);
}

/// Moves the one reduction loop of a generic last where it is not, and is
/// long enough for a warp per output (or dynamic): the sum of MLA's decode
/// over the cached latents, out[b, n, c] += p[b, n, s] latents[b, s, c],
/// would otherwise be one thread per output walking all the keys. Lanes
/// then read rows of the latents K elements apart, which the L1 and L2
/// serve, against one serial chain per output.
void moveReductionLast(RewriterBase &rewriter, linalg::LinalgOp op,
                       int64_t minLength) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumReductionLoops() != 1)
    return;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  unsigned reduction =
      llvm::find_if(iterators, linalg::isReductionIterator) - iterators.begin();
  if (reduction + 1 == iterators.size())
    return;
  int64_t length = generic.getStaticLoopRanges()[reduction];
  if (!ShapedType::isDynamic(length) && length < minLength)
    return;
  SmallVector<unsigned> order;
  for (unsigned loop = 0; loop < iterators.size(); ++loop)
    if (loop != reduction)
      order.push_back(loop);
  order.push_back(reduction);
  rewriter.setInsertionPoint(generic);
  (void)linalg::interchangeGenericOp(rewriter, generic, order);
}

/// The value `combiner` leaves unchanged: 0 for a sum, -inf for a maximum,
/// +inf for a minimum.
TypedAttr identityOf(Operation *combiner, FloatType type) {
  if (isa<arith::AddFOp>(combiner))
    return FloatAttr::get(type, 0.0);
  bool maximum = isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner);
  return FloatAttr::get(type,
                        APFloat::getInf(type.getFloatSemantics(), maximum));
}

/// The vector reduction of `combiner`'s kind.
vector::CombiningKind combiningKindOf(Operation *combiner) {
  if (isa<arith::AddFOp>(combiner))
    return vector::CombiningKind::ADD;
  if (isa<arith::MaximumFOp>(combiner))
    return vector::CombiningKind::MAXIMUMF;
  if (isa<arith::MaxNumFOp>(combiner))
    return vector::CombiningKind::MAXNUMF;
  if (isa<arith::MinimumFOp>(combiner))
    return vector::CombiningKind::MINIMUMF;
  return vector::CombiningKind::MINNUMF;
}

/// `combiner`'s operation on `lhs` and `rhs`.
Value combine(OpBuilder &b, Operation *combiner, Value lhs, Value rhs) {
  IRMapping mapping;
  mapping.map(combiner->getOperand(0), lhs);
  mapping.map(combiner->getOperand(1), rhs);
  Operation *clone = b.clone(*combiner, mapping);
  // On vectors where the operands are.
  clone->getResult(0).setType(lhs.getType());
  return clone->getResult(0);
}

/// The element-wise op right after a warp reduction that maps over the
/// same rows with its result (a norm's scaling by the sum of squares, a
/// softmax's exp(x - max) and division by the sum), which the reduction's
/// warp can run too: every lane holds the row's total after the
/// butterfly, and the lanes' elements are the ones they summed. Null
/// unless `next` is an all-parallel generic over the same loops that
/// reads one of the reduction's inputs through the same map (so the same
/// iteration space and lanes), reads the reduction's output only through
/// its output map, writes neither that output nor another reduction
/// input, and writes a reduction input only in place (the same map).
linalg::GenericOp rowConsumerOf(linalg::LinalgOp reduction, Operation *next) {
  auto consumer = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!consumer || !consumer.hasPureBufferSemantics() ||
      consumer.getNumLoops() != reduction.getNumLoops() ||
      consumer.getNumReductionLoops() != 0 || consumer.getNumDpsInits() != 1)
    return nullptr;
  OpOperand *result = reduction.getDpsInitOperand(0);
  Value resultBuffer = bufferOf(result->get());
  AffineMap resultMap = reduction.getMatchingIndexingMap(result);
  bool sharesRows = false;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(input);
    if (bufferOf(input->get()) == resultBuffer) {
      // The total comes from the lanes' registers: only the output itself,
      // read as the reduction wrote it.
      if (input->get() != result->get() || map != resultMap)
        return nullptr;
      continue;
    }
    for (OpOperand *read : reduction.getDpsInputOperands())
      if (read->get() == input->get() &&
          reduction.getMatchingIndexingMap(read) == map)
        sharesRows = true;
  }
  OpOperand *written = consumer.getDpsInitOperand(0);
  Value writtenBuffer = bufferOf(written->get());
  if (!sharesRows || writtenBuffer == resultBuffer ||
      consumer.payloadUsesValueFromOperand(written))
    return nullptr;
  // In place over a row the reduction read: each lane writes only the
  // elements it read.
  for (OpOperand *read : reduction.getDpsInputOperands())
    if (bufferOf(read->get()) == writtenBuffer &&
        (read->get() != written->get() ||
         reduction.getMatchingIndexingMap(read) !=
             consumer.getMatchingIndexingMap(written)))
      return nullptr;
  return consumer;
}

/// `op`'s payload at the loop indices `dims`, cloned at `b`: each input
/// loaded through its map (or `given` where the input is `givenFor`),
/// linalg.index replaced by its index, every op but `skip` cloned. The
/// mapping from the payload's values to the clones.
IRMapping payloadAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                    ValueRange dims, Operation *skip = nullptr,
                    Value givenFor = Value(), Value given = Value()) {
  Block *body = op.getBlock();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get(), element = value;
    if (givenFor && value == givenFor)
      element = given;
    else if (isa<ShapedType>(value.getType()))
      element = memref::LoadOp::create(
          b, loc, value,
          indicesAt(b, loc, op.getMatchingIndexingMap(input), dims));
    mapping.map(body->getArgument(input->getOperandNumber()), element);
  }
  // An op in place over `givenFor` reads it through its output.
  for (OpOperand &init : op.getDpsInitsMutable())
    if (givenFor && init.get() == givenFor)
      mapping.map(body->getArgument(init.getOperandNumber()), given);
  for (Operation &payload : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(payload)) {
      mapping.map(index.getResult(), dims[index.getDim()]);
      continue;
    }
    if (&payload != skip)
      b.clone(payload, mapping);
  }
  return mapping;
}

/// `op`'s value at the loop indices `dims` (payloadAt, `given` for
/// `givenFor`), stored where its output map puts it.
void storePayloadAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                    ValueRange dims, Value givenFor, Value given) {
  IRMapping mapping =
      payloadAt(b, loc, op, dims, /*skip=*/nullptr, givenFor, given);
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  OpOperand *out = op.getDpsInitOperand(0);
  memref::StoreOp::create(
      b, loc, mapping.lookupOrDefault(yield.getOperand(0)), out->get(),
      indicesAt(b, loc, op.getMatchingIndexingMap(out), dims));
}

using BranchBuilder = function_ref<SmallVector<Value>(OpBuilder &, Location)>;

/// An scf.if on `aligned` (rowsAreAligned) whose branches yield what
/// `wide` and `narrow` build: vectors where the rows start at 16-byte
/// boundaries, known only at run time and the same for the whole warp.
ValueRange ifAligned(OpBuilder &b, Location loc, Value aligned,
                     BranchBuilder wide, BranchBuilder narrow) {
  return scf::IfOp::create(
             b, loc, aligned,
             [&](OpBuilder &nb, Location nl) {
               scf::YieldOp::create(nb, nl, wide(nb, nl));
             },
             [&](OpBuilder &nb, Location nl) {
               scf::YieldOp::create(nb, nl, narrow(nb, nl));
             })
      .getResults();
}

/// The parallel loop dimensions of a reduction that its largest input of
/// static shape does not depend on, where that input is read along the
/// reduced dimension: a projection's rows (sequences, tokens) against its
/// weight matrix. A warp that sums several of those rows reads each
/// weight element once for all of them. Empty where there is no such
/// input or no such dimension, or where they hold one row.
SmallVector<unsigned> sharedOperandRows(linalg::LinalgOp op) {
  unsigned reduced = op.getNumLoops() - 1;
  OpOperand *shared = nullptr;
  int64_t largest = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || !type.hasStaticShape() ||
        !op.getMatchingIndexingMap(input).isFunctionOfDim(reduced))
      continue;
    if (type.getNumElements() > largest) {
      largest = type.getNumElements();
      shared = input;
    }
  }
  if (!shared)
    return {};
  AffineMap map = op.getMatchingIndexingMap(shared);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> rows;
  bool dynamic = false;
  int64_t staticRows = 1;
  for (unsigned d = 0; d < reduced; ++d) {
    if (map.isFunctionOfDim(d))
      continue;
    rows.push_back(d);
    if (ShapedType::isDynamic(ranges[d]))
      dynamic = true;
    else
      staticRows *= ranges[d];
  }
  if (!dynamic && staticRows <= 1)
    return {};
  return rows;
}

/// `linear` as indices over `sizes` at the dimensions `dims` of `ivs`, the
/// last of them fastest.
void delinearizeInto(OpBuilder &b, Location loc, Value linear,
                     ArrayRef<Value> sizes, ArrayRef<unsigned> dims,
                     MutableArrayRef<Value> ivs) {
  Value rest = linear;
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    unsigned d = dims[i];
    ivs[d] = rest;
    if (i > 0) {
      ivs[d] = arith::RemUIOp::create(b, loc, rest, sizes[d]);
      rest = arith::DivUIOp::create(b, loc, rest, sizes[d]);
    }
  }
}

/// The totals of a reduction (finalCombinerOf) over its last loop
/// dimension for each output row of `rows` (the parallel loop indices of
/// one output each), summed by `lanes` threads: a warp (32 lanes) strides
/// over the reduced dimension, one vector or element of every row per
/// step, and combines its partial results with a butterfly of xor
/// shuffles, after which every lane holds the totals; a single lane walks
/// the whole dimension.
SmallVector<Value> rowTotals(OpBuilder &b, Location loc, linalg::LinalgOp op,
                             Operation *combiner, Value lane, Value length,
                             ArrayRef<SmallVector<Value>> rows,
                             int64_t lanes) {
  Value out = op.getBlock()->getArguments().back();
  Value summand = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
  int64_t count = rows.size();
  auto elementType = cast<FloatType>(summand.getType());
  Value initial = arith::ConstantOp::create(b, loc, elementType,
                                            identityOf(combiner, elementType));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> initials(count, initial);
  // The rows' partial results in the last `count` iteration values.
  auto narrowSum = [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
    SmallVector<Value> next(acc);
    for (auto [r, ivs] : llvm::enumerate(rows)) {
      SmallVector<Value> dims(ivs);
      dims.push_back(k);
      IRMapping mapping = payloadAt(nb, l, op, dims, combiner);
      Value &sum = next[next.size() - count + r];
      sum = combine(nb, combiner, sum, mapping.lookup(summand));
    }
    return next;
  };
  SmallVector<Value> partials;
  LaneWalk walk = lanes == 1 ? LaneWalk() : laneWalkOf({op});
  // Each row adds its own operands to the registers a step holds; two
  // steps still keep a second load of the shared operand in flight.
  if (count > 1)
    walk.unroll = std::max(std::min<int64_t>(walk.unroll, 2),
                           walk.unroll / count);
  if (lanes == 1) {
    partials = llvm::to_vector_of<Value>(
        scf::ForOp::create(
            b, loc, zero, length, one, initials,
            [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
              scf::YieldOp::create(nb, l, narrowSum(nb, l, k, acc));
            })
            .getResults());
  } else if (walk.width > 1) {
    // The rows' vector sums first, then their scalar ones for the rest.
    auto wideSum = [&](OpBuilder &nb, Location l, ArrayRef<Value> starts,
                       ValueRange acc) {
      // Every load of the step before its arithmetic; the rows' loads of
      // an operand they share are the same, and one after CSE.
      SmallVector<IRMapping> steps;
      for (Value start : starts)
        for (const SmallVector<Value> &ivs : rows) {
          SmallVector<Value> dims(ivs);
          dims.push_back(start);
          steps.push_back(loadWideInputs(nb, l, op, dims, walk.width));
        }
      SmallVector<Value> next(acc);
      for (auto [i, mapping] : llvm::enumerate(steps)) {
        cloneWidePayload(nb, l, op, mapping, walk.width, combiner);
        Value &sum = next[i % count];
        sum = combine(nb, combiner, sum, mapping.lookup(summand));
      }
      return next;
    };
    partials = llvm::to_vector(ifAligned(
        b, loc, rowsAreAligned(b, loc, {op}),
        [&](OpBuilder &nb, Location l) -> SmallVector<Value> {
          auto vectorType = VectorType::get({walk.width}, elementType);
          Value vectorInitial = arith::ConstantOp::create(
              nb, l,
              DenseElementsAttr::get(vectorType,
                                     identityOf(combiner, elementType)));
          SmallVector<Value> inits(count, vectorInitial);
          inits.append(initials);
          SmallVector<Value> sums = walkLane(nb, l, lane, length, walk, inits,
                                             wideSum, narrowSum);
          SmallVector<Value> results;
          for (int64_t r = 0; r < count; ++r)
            results.push_back(vector::ReductionOp::create(
                nb, l, combiningKindOf(combiner), sums[r], sums[count + r]));
          return results;
        },
        [&](OpBuilder &nb, Location l) {
          return walkLane(nb, l, lane, length, LaneWalk(), initials, nullptr,
                          narrowSum);
        }));
  } else {
    partials = walkLane(b, loc, lane, length, LaneWalk(), initials, nullptr,
                        narrowSum);
  }
  for (Value &partial : partials)
    for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
      Value other = gpu::ShuffleOp::create(b, loc, partial, offset, kWarpSize,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      partial = combine(b, combiner, partial, other);
    }
  return partials;
}

/// Combines a row's total into its output element (or into the op's
/// folded fill) in the first lane, which also runs the epilogue on it.
/// Returns the combined total.
Value storeRowTotal(OpBuilder &b, Location loc, linalg::LinalgOp op,
                    Operation *combiner, linalg::LinalgOp epilogue,
                    Value lane, ArrayRef<Value> ivs, Value total) {
  OpOperand *init = op.getDpsInitOperand(0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> dims(ivs);
  dims.push_back(zero);
  SmallVector<Value> outIndices =
      indicesAt(b, loc, op.getMatchingIndexingMap(init), dims);
  // The fill folded into the op (gdn-gpu-fold-fills) is the value the
  // output held; the output is then only written.
  Value old;
  if (auto initial = op->getAttrOfType<TypedAttr>(kReductionInitAttrName))
    old = arith::ConstantOp::create(b, loc, initial);
  else
    old = memref::LoadOp::create(b, loc, init->get(), outIndices);
  Value rowTotal = combine(b, combiner, old, total);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  auto write = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(write.thenBlock());
  memref::StoreOp::create(b, loc, rowTotal, init->get(), outIndices);
  if (epilogue)
    storePayloadAt(b, loc, epilogue, ivs, init->get(), rowTotal);
  return rowTotal;
}

/// Rewrites a reduction (finalCombinerOf) into `lanes` threads per output
/// element (rowTotals, storeRowTotal). With `rowDims` (sharedOperandRows),
/// a warp takes `rowGroup` outputs that differ in those dimensions only,
/// consecutive in them, and reads the operand they share once per step
/// for all of them; a group that the rows do not fill takes its rows one
/// at a time. A row consumer (rowConsumerOf) runs in the warp of each row.
void lowerReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                    Operation *combiner, linalg::GenericOp consumer,
                    linalg::LinalgOp epilogue, int64_t lanes,
                    ArrayRef<unsigned> rowDims, int64_t rowGroup,
                    int64_t blockThreads) {
  Location loc = op.getLoc();
  if (rowDims.empty())
    rowGroup = 1;
  // With a row consumer or an epilogue, at its place: what lies between
  // (sizes, views, its allocation; nextMemoryOp) may define its operands.
  rewriter.setInsertionPoint(consumer   ? consumer.getOperation()
                             : epilogue ? epilogue.getOperation()
                                        : op.getOperation());
  auto constant = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value zero = constant(0), one = constant(1), warp = constant(kWarpSize);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  SmallVector<Value> sizes;
  for (const Range &range : ranges)
    sizes.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, range.size));
  Value length = sizes.pop_back_val();
  SmallVector<unsigned> columnDims;
  Value rows = one, total = one;
  for (auto [d, size] : llvm::enumerate(sizes)) {
    if (llvm::is_contained(rowDims, d)) {
      rows = arith::MulIOp::create(rewriter, loc, rows, size);
      continue;
    }
    columnDims.push_back(d);
    total = arith::MulIOp::create(rewriter, loc, total, size);
  }
  Value columns = total;
  Value groups = rows;
  if (rowGroup > 1) {
    groups = arith::CeilDivUIOp::create(rewriter, loc, rows,
                                        constant(rowGroup));
    total = arith::MulIOp::create(rewriter, loc, total, groups);
  }
  int64_t outputsPerBlock = blockThreads / lanes;
  Value blocks = arith::CeilDivUIOp::create(rewriter, loc, total,
                                            constant(outputsPerBlock));
  auto grid = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                      ValueRange{blocks}, ValueRange{one});
  rewriter.setInsertionPointToStart(grid.getBody());
  auto block = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                       ValueRange{constant(blockThreads)},
                                       ValueRange{one});
  rewriter.setInsertionPointToStart(block.getBody());
  Value thread = block.getInductionVars()[0];
  Value lane =
      lanes == 1
          ? zero
          : arith::RemUIOp::create(rewriter, loc, thread, warp).getResult();
  Value linear = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, grid.getInductionVars()[0],
                            constant(outputsPerBlock)),
      lanes == 1
          ? thread
          : arith::DivUIOp::create(rewriter, loc, thread, warp).getResult());
  // The condition is the same for the whole warp, so every lane of a warp
  // that sums meets the shuffles.
  Value inRange = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ult, linear, total);
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
  rewriter.setInsertionPointToStart(guard.thenBlock());
  SmallVector<Value> ivs(sizes.size());
  if (rowGroup == 1) {
    auto all = llvm::to_vector(llvm::seq<unsigned>(0, sizes.size()));
    delinearizeInto(rewriter, loc, linear, sizes, all, ivs);
  } else {
    // The columns fastest: neighbouring warps read neighbouring rows of
    // the shared operand, and the same rows of the others.
    Value column = arith::RemUIOp::create(rewriter, loc, linear, columns);
    Value groupIndex = arith::DivUIOp::create(rewriter, loc, linear, columns);
    delinearizeInto(rewriter, loc, column, sizes, columnDims, ivs);
    Value firstRow = arith::MulIOp::create(rewriter, loc, groupIndex,
                                           constant(rowGroup));
    Value rowsHere = arith::MinUIOp::create(
        rewriter, loc, constant(rowGroup),
        arith::SubIOp::create(rewriter, loc, rows, firstRow));
    auto rowAt = [&](OpBuilder &b, Value offset) {
      SmallVector<Value> rowIvs(ivs);
      delinearizeInto(b, loc, arith::AddIOp::create(b, loc, firstRow, offset),
                      sizes, rowDims, rowIvs);
      return rowIvs;
    };
    Value full = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       rowsHere, constant(rowGroup));
    scf::IfOp::create(
        rewriter, loc, full,
        [&](OpBuilder &b, Location l) {
          SmallVector<SmallVector<Value>> group;
          for (int64_t r = 0; r < rowGroup; ++r)
            group.push_back(
                rowAt(b, arith::ConstantIndexOp::create(b, l, r)));
          SmallVector<Value> totals =
              rowTotals(b, l, op, combiner, lane, length, group, lanes);
          for (auto [rowIvs, rowTotal] : llvm::zip_equal(group, totals))
            storeRowTotal(b, l, op, combiner, epilogue, lane, rowIvs,
                          rowTotal);
          scf::YieldOp::create(b, l);
        },
        [&](OpBuilder &b, Location l) {
          scf::ForOp::create(
              b, l, arith::ConstantIndexOp::create(b, l, 0), rowsHere,
              arith::ConstantIndexOp::create(b, l, 1), ValueRange{},
              [&](OpBuilder &fb, Location fl, Value r, ValueRange) {
                SmallVector<Value> rowIvs = rowAt(fb, r);
                Value rowTotal = rowTotals(fb, fl, op, combiner, lane,
                                           length, {rowIvs}, lanes)
                                     .front();
                storeRowTotal(fb, fl, op, combiner, epilogue, lane, rowIvs,
                              rowTotal);
                scf::YieldOp::create(fb, fl);
              });
          scf::YieldOp::create(b, l);
        });
    if (epilogue)
      rewriter.eraseOp(epilogue);
    rewriter.eraseOp(op);
    (void)gpu::setMappingAttr(grid,
                              mappingTo(rewriter, gpu::Processor::BlockX));
    (void)gpu::setMappingAttr(block,
                              mappingTo(rewriter, gpu::Processor::ThreadX));
    return;
  }
  Value partial = rowTotals(rewriter, loc, op, combiner, lane, length, {ivs},
                            lanes)
                      .front();
  Value rowTotal =
      storeRowTotal(rewriter, loc, op, combiner, epilogue, lane, ivs, partial);
  if (epilogue)
    rewriter.eraseOp(epilogue);
  OpOperand *init = op.getDpsInitOperand(0);
  if (consumer) {
    // The row consumer: each lane maps the elements it summed, with the
    // total from its register (lane 0's store is not visible to the
    // others without a fence).
    Value total = init->get();
    auto narrowMap = [&](OpBuilder &b, Location l, Value k, ValueRange) {
      SmallVector<Value> elementDims(ivs);
      elementDims.push_back(k);
      storePayloadAt(b, l, consumer, elementDims, total, rowTotal);
      return SmallVector<Value>();
    };
    auto narrowRow = [&](OpBuilder &b, Location l) {
      return walkLane(b, l, lane, length, LaneWalk(), ValueRange{}, nullptr,
                      narrowMap);
    };
    LaneWalk walk = laneWalkOf({consumer}, total);
    if (walk.width > 1) {
      auto yield = cast<linalg::YieldOp>(consumer.getBlock()->getTerminator());
      auto wideMap = [&](OpBuilder &b, Location l, ArrayRef<Value> starts,
                         ValueRange) {
        // Every load of the group before the first store: a consumer may
        // write in place, and the stores would order the loads after them.
        SmallVector<SmallVector<Value>> dims;
        SmallVector<IRMapping> steps;
        for (Value start : starts) {
          dims.emplace_back(ivs);
          dims.back().push_back(start);
          steps.push_back(loadWideInputs(b, l, consumer, dims.back(),
                                         walk.width, total, rowTotal));
        }
        for (auto [mapping, at] : llvm::zip_equal(steps, dims)) {
          cloneWidePayload(b, l, consumer, mapping, walk.width);
          storeWideOutput(b, l, consumer,
                          mapping.lookupOrDefault(yield.getOperand(0)), at,
                          walk.width);
        }
        return SmallVector<Value>();
      };
      ifAligned(
          rewriter, loc, rowsAreAligned(rewriter, loc, {consumer}, total),
          [&](OpBuilder &b, Location l) {
            return walkLane(b, l, lane, length, walk, ValueRange{}, wideMap,
                            narrowMap);
          },
          narrowRow);
    } else {
      narrowRow(rewriter, loc);
    }
    rewriter.eraseOp(consumer);
  }
  rewriter.eraseOp(op);
  (void)gpu::setMappingAttr(grid, mappingTo(rewriter, gpu::Processor::BlockX));
  (void)gpu::setMappingAttr(block,
                            mappingTo(rewriter, gpu::Processor::ThreadX));
}

/// A reduction that runs in one thread per output reads its output at
/// every step: the fill folded into it (gdn-gpu-fold-fills) is written
/// back before it, as a grid-mapped loop of its own.
void restoreFoldedFill(RewriterBase &rewriter, linalg::LinalgOp op) {
  auto initial = op->getAttrOfType<TypedAttr>(kReductionInitAttrName);
  if (!initial)
    return;
  op->removeAttr(kReductionInitAttrName);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value value = arith::ConstantOp::create(rewriter, loc, initial);
  auto fill = linalg::FillOp::create(rewriter, loc, value, op.getDpsInits()[0]);
  (void)lowerToLoops(rewriter, fill);
}

struct GdnGPUMapParallelLoopsPass
    : gdn::impl::GdnGPUMapParallelLoopsPassBase<GdnGPUMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    GdnGPUMapParallelLoopsPassOptions options;
    options.blockThreads = blockThreads;
    options.rowGroup = rowGroup;
    if (llvm::Error error = checkMapParallelLoopsOptions(options)) {
      function.emitError() << "gdn-gpu-map-parallel-loops: "
                           << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Copies between buffers run as kernels too: both sides are device
    // memory.
    SmallVector<memref::CopyOp> copies;
    function.walk([&](memref::CopyOp copy) {
      if (!isInKernel(copy))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!isInKernel(op))
        ops.push_back(op);
    });
    struct Reduction {
      linalg::LinalgOp op;
      Operation *combiner;
      linalg::GenericOp consumer;
      linalg::LinalgOp epilogue;
      int64_t lanes;
      SmallVector<unsigned> rowDims;
    };
    SmallVector<Reduction> reductions;
    llvm::SmallPtrSet<Operation *, 16> fused;
    auto epilogueFor = [&](linalg::LinalgOp op) {
      linalg::LinalgOp epilogue = fuseEpilogues ? findEpilogue(op) : nullptr;
      // One reduction per epilogue (a later one may find it past the first).
      if (!epilogue || !fused.insert(epilogue).second)
        return linalg::LinalgOp();
      return epilogue;
    };
    for (linalg::LinalgOp op : ops) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("on tensors: the GPU mapping runs after bufferization");
        return signalPassFailure();
      }
      if (fused.contains(op))
        continue;
      if (warpReductions) {
        moveReductionLast(rewriter, op, 2 * kWarpSize);
        if (Operation *combiner = warpCombinerOf(op, 2 * kWarpSize)) {
          linalg::GenericOp consumer =
              fuseRows ? rowConsumerOf(op, nextMemoryOp(op)) : nullptr;
          // An op an earlier reduction took as its epilogue stays there.
          if (consumer && !fused.insert(consumer).second)
            consumer = nullptr;
          linalg::LinalgOp epilogue = consumer ? nullptr : epilogueFor(op);
          // A row consumer maps the rows in the warp that summed them.
          SmallVector<unsigned> rowDims;
          if (!consumer && rowGroup > 1)
            rowDims = sharedOperandRows(op);
          reductions.push_back(
              {op, combiner, consumer, epilogue, kWarpSize, rowDims});
          continue;
        }
      }
      // Any other reduction with a final combiner: a thread per output,
      // the total in a register.
      op = parallelDimensionsFirst(rewriter, op);
      if (Operation *combiner = warpCombinerOf(op, /*minLength=*/0)) {
        reductions.push_back({op, combiner, nullptr, epilogueFor(op), 1, {}});
        continue;
      }
      restoreFoldedFill(rewriter, op);
      if (failed(lowerToLoops(rewriter, op)))
        return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    function.walk([&](scf::ParallelOp loop) {
      if (!isInKernel(loop) && !loop->getParentOfType<scf::ParallelOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost)
      if (failed(mapToGrid(rewriter, loop, blockThreads)))
        return signalPassFailure();
    // After the element loops, which would otherwise take these loops for
    // their own.
    for (const Reduction &r : reductions)
      lowerReduction(rewriter, r.op, r.combiner, r.consumer, r.epilogue,
                     r.lanes, r.rowDims, rowGroup, blockThreads);
  }
};
} // namespace

Operation *mlir::gdn::finalCombinerOf(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return nullptr;
  Block *body = op.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  Value out = body->getArguments().back();
  if (!yield || yield.getNumOperands() != 1 || !out.hasOneUse())
    return nullptr;
  Operation *combiner = yield.getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != body ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp,
           arith::MinimumFOp, arith::MinNumFOp>(combiner) ||
      !llvm::is_contained(combiner->getOperands(), out))
    return nullptr;
  return combiner;
}

llvm::Error mlir::gdn::checkMapParallelLoopsOptions(
    const GdnGPUMapParallelLoopsPassOptions &options) {
  if (options.rowGroup < 1 || options.rowGroup > 16)
    return llvm::createStringError("row-group must be in 1..16, but got " +
                                   llvm::Twine(options.rowGroup));
  if (options.blockThreads < 32 || options.blockThreads > 1024 ||
      options.blockThreads % 32 != 0)
    return llvm::createStringError(
        "block-threads must be a multiple of 32 in 32..1024, but got " +
        llvm::Twine(options.blockThreads));
  return llvm::Error::success();
}
