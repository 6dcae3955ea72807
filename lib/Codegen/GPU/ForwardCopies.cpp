//===- ForwardCopies.cpp - element-wise ops write and read in place -------===//
//
// Bufferization leaves a model step with copies between a temporary and
// its real place: a new cache row computed into a temporary and copied
// into the cache, a slice of the conv state copied out before it is read.
// On the GPU each copy is a kernel launch, and a decode step is made of
// little else but launches. Where only element-wise ops (linalg.generic)
// write or read the temporary, they can take the place itself: the copy
// and the temporary go. The checks below are what makes that exact: the
// place is touched by nothing else while the temporary lives, and the
// temporary is not used past the copy (or not written after it).
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUFORWARDCOPIESPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Whether `op` or an op nested in it has an operand that is a view of
/// `buffer`; `allowed` may excuse an operand (op, operand number).
bool touches(Operation *op, Value buffer,
             function_ref<bool(Operation *, unsigned)> allowed) {
  WalkResult result = op->walk([&](Operation *nested) {
    for (OpOperand &operand : nested->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()) ||
          bufferOf(operand.get()) != buffer)
        continue;
      if (isa<ViewLikeOpInterface>(nested) ||
          isa<memref::DimOp, memref::ExtractStridedMetadataOp>(nested))
        continue;
      if (allowed && allowed(nested, operand.getOperandNumber()))
        continue;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Whether some op in [first, last] of their block touches `buffer`.
bool rangeTouches(Operation *first, Operation *last, Value buffer,
                  function_ref<bool(Operation *, unsigned)> allowed = {}) {
  for (Operation *op = first;; op = op->getNextNode()) {
    if (touches(op, buffer, allowed))
      return true;
    if (op == last)
      return false;
  }
}

/// A value equal to `view` that is available before `point`: `view` itself
/// where it dominates `point`, else a copy of the view ops that make it,
/// built before `point` when their other operands dominate it; null if
/// neither.
Value availableBefore(Value view, Operation *point, DominanceInfo &dominance,
                      OpBuilder &builder) {
  if (dominance.properlyDominates(view, point))
    return view;
  Operation *def = view.getDefiningOp();
  if (!def || !isa<ViewLikeOpInterface>(def) || def->getNumRegions() != 0 ||
      def->getNumResults() != 1)
    return Value();
  auto viewLike = cast<ViewLikeOpInterface>(def);
  IRMapping mapping;
  for (Value operand : def->getOperands()) {
    if (operand == viewLike.getViewSource()) {
      Value source = availableBefore(operand, point, dominance, builder);
      if (!source)
        return Value();
      mapping.map(operand, source);
    } else if (!dominance.properlyDominates(operand, point)) {
      return Value();
    }
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(point);
  return builder.clone(*def, mapping)->getResult(0);
}

/// Whether `user` may see its memref operand replaced by one of the same
/// shape and element type but another layout: an element-wise op
/// (linalg.generic, whose operands may have any layout), a size query, an
/// element access or a deallocation.
bool takesAnyLayout(Operation *user) {
  return isa<linalg::GenericOp, memref::DimOp, memref::LoadOp,
             memref::StoreOp, memref::DeallocOp>(user);
}

/// The uses of a temporary besides one copy of it: each with the op of the
/// copy's block that holds it, and the deallocations apart.
struct TemporaryUses {
  memref::AllocOp alloc;
  SmallVector<std::pair<Operation *, OpOperand *>> uses;
  SmallVector<Operation *> deallocs;
};

/// The allocation `value` is, made in `copy`'s block, with its uses other
/// than `copy` (sizes asked of it folded first); failure where it is not
/// one or a use lies outside that block.
FailureOr<TemporaryUses> temporaryUses(Value value, memref::CopyOp copy) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  Block &block = *copy->getBlock();
  if (!alloc || alloc->getBlock() != &block)
    return failure();
  // Sizes asked with constant dimensions become the sizes it was made
  // with, so that they do not keep it alive.
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
    auto dim = dyn_cast<memref::DimOp>(user);
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index || *index < 0 || *index >= alloc.getType().getRank())
      continue;
    OpBuilder builder(dim);
    OpFoldResult size = alloc.getMixedSizes()[*index];
    Value known = isa<Value>(size)
                      ? cast<Value>(size)
                      : arith::ConstantIndexOp::create(
                            builder, dim.getLoc(), *getConstantIntValue(size));
    dim.replaceAllUsesWith(known);
    dim->erase();
  }
  TemporaryUses result{alloc, {}, {}};
  for (OpOperand &use : alloc.getResult().getUses()) {
    Operation *user = use.getOwner();
    if (user == copy)
      continue;
    if (isa<memref::DeallocOp>(user)) {
      result.deallocs.push_back(user);
      continue;
    }
    Operation *holder = block.findAncestorOpInBlock(*user);
    if (!holder)
      return failure();
    result.uses.emplace_back(holder, &use);
  }
  llvm::sort(result.uses, [](auto &a, auto &b) {
    return a.first != b.first && a.first->isBeforeInBlock(b.first);
  });
  return result;
}

struct GdnGPUForwardCopiesPass
    : gdn::impl::GdnGPUForwardCopiesPassBase<GdnGPUForwardCopiesPass> {
  void runOnOperation() override {
    DominanceInfo dominance(getOperation());
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<gpu::LaunchOp>())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies)
      if (failed(writeInPlace(copy, dominance)))
        (void)readInPlace(copy);
  }

  /// `copy %tmp, %place` where %tmp is an allocation written and read only
  /// by element-wise ops before the copy: they take %place instead. An
  /// allocation that several layers reuse (one `tensor.empty` for all of
  /// them) is taken a life at a time: from an op that overwrites it whole
  /// to the copy, with the next use after the copy overwriting it whole
  /// again. %place must be touched by nothing else from the life's first
  /// use to the copy (the ops would now write it earlier, and must not
  /// read it while writing it: a conv state shifted into itself).
  LogicalResult writeInPlace(memref::CopyOp copy, DominanceInfo &dominance) {
    FailureOr<TemporaryUses> temporary =
        temporaryUses(copy.getSource(), copy);
    if (failed(temporary))
      return failure();
    Value tmp = copy.getSource();
    // The uses of this life, in block order, and the first use after it.
    SmallVector<std::pair<Operation *, OpOperand *>> life;
    OpOperand *nextUse = nullptr;
    for (auto &[holder, use] : temporary->uses) {
      if (!copy->isBeforeInBlock(holder))
        life.emplace_back(holder, use);
      else if (!nextUse)
        nextUse = use;
    }
    // The life starts after the last earlier copy from %tmp.
    auto previousCopy = llvm::find_if(llvm::reverse(life), [&](auto &use) {
      auto earlier = dyn_cast<memref::CopyOp>(use.second->getOwner());
      return earlier && earlier.getSource() == tmp;
    });
    if (previousCopy != life.rend())
      life.erase(life.begin(), previousCopy.base());
    if (life.empty() || !overwritesWhole(*life.front().second))
      return failure();
    if (nextUse && !overwritesWhole(*nextUse))
      return failure();
    for (auto &[holder, use] : life)
      if (!takesAnyLayout(use->getOwner()))
        return failure();
    Operation *first = life.front().first;
    Value place = bufferOf(copy.getTarget());
    if (place == tmp)
      return failure();
    if (rangeTouches(first, copy->getPrevNode(), place))
      return failure();
    OpBuilder builder(copy);
    Value target = availableBefore(copy.getTarget(), first, dominance, builder);
    if (!target)
      return failure();
    for (auto &[holder, use] : life)
      use->set(target);
    Value oldTarget = copy.getTarget();
    copy->erase();
    if (target != oldTarget)
      eraseUnusedViews(oldTarget);
    if (nextUse)
      return success();
    for (Operation *dealloc : temporary->deallocs)
      dealloc->erase();
    if (temporary->alloc->use_empty())
      temporary->alloc->erase();
    return success();
  }

  /// Erases the views that made `view` where nothing else uses them.
  static void eraseUnusedViews(Value view) {
    while (Operation *def = view.getDefiningOp()) {
      auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
      if (!viewLike || !def->use_empty())
        return;
      view = viewLike.getViewSource();
      def->erase();
    }
  }

  /// Whether `use` is a linalg.generic's output that it writes at every
  /// element without reading it first.
  static bool overwritesWhole(OpOperand &use) {
    auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!generic || !generic.isDpsInit(&use) ||
        generic.getNumReductionLoops() != 0 ||
        !generic.getMatchingIndexingMap(&use).isPermutation() ||
        generic.payloadUsesValueFromOperand(&use))
      return false;
    // Read through another operand or inside the payload, it is not
    // overwritten before it is read.
    return llvm::count_if(generic->getOpOperands(), [&](OpOperand &other) {
             return other.get() == use.get();
           }) == 1 &&
           !generic.getRegion()
                .walk([&](Operation *op) {
                  return llvm::is_contained(op->getOperands(), use.get())
                             ? WalkResult::interrupt()
                             : WalkResult::advance();
                })
                .wasInterrupted();
  }

  /// `copy %view, %tmp` where %tmp is an allocation that only element-wise
  /// ops read after the copy: they read %view instead, provided that
  /// nothing writes %view's buffer until the last of them.
  LogicalResult readInPlace(memref::CopyOp copy) {
    FailureOr<TemporaryUses> temporary =
        temporaryUses(copy.getTarget(), copy);
    if (failed(temporary))
      return failure();
    Value tmp = copy.getTarget();
    Operation *last = nullptr;
    for (auto &[holder, use] : temporary->uses) {
      if (!copy->isBeforeInBlock(holder))
        return failure();
      // Read only: a generic's input, a load, a size.
      Operation *user = use->getOwner();
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!isa<memref::LoadOp, memref::DimOp>(user) &&
          !(generic && generic.isDpsInput(use)))
        return failure();
      last = holder;
    }
    if (!last)
      return failure();
    Value source = bufferOf(copy.getSource());
    if (source == tmp)
      return failure();
    // Between the copy and the last reader, the source's buffer may be
    // read but not written.
    auto readsOnly = [](Operation *op, unsigned operand) {
      if (isa<memref::LoadOp>(op))
        return true;
      if (isa<memref::CopyOp>(op))
        return operand == 0;
      if (auto generic = dyn_cast<linalg::GenericOp>(op))
        return generic.isDpsInput(&op->getOpOperand(operand));
      return false;
    };
    if (rangeTouches(copy->getNextNode(), last, source, readsOnly))
      return failure();
    for (auto &[holder, use] : temporary->uses)
      use->set(copy.getSource());
    for (Operation *dealloc : temporary->deallocs)
      dealloc->erase();
    Operation *alloc = temporary->alloc;
    copy->erase();
    alloc->erase();
    return success();
  }
};
} // namespace
