//===- FoldFills.cpp - fills folded into the kernels that read them -------===//
//
// A decode step's accumulators are filled and copied before the
// reductions that accumulate into them: one kernel launch each, for
// buffers whose content is a single constant. This pass follows, in each
// block of host code, which allocations hold a constant everywhere (last
// written by a whole-buffer fill, untouched since), turns copies from them
// into fills, and hands the constant to the reduction that overwrites
// them, so that the fill itself goes.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "BufferViews.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUFOLDFILLSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// The allocation that `value` is a view of, or null where it is not one
/// of this function's allocations (an argument, a global).
Value allocationOf(Value value) {
  Value buffer = bufferOf(value);
  return buffer.getDefiningOp<memref::AllocOp>() ? buffer : Value();
}

/// The allocation of which `value` is the whole (the allocation itself, or
/// a reshape or cast of it), or null.
Value wholeAllocationOf(Value value) {
  while (!value.getDefiningOp<memref::AllocOp>()) {
    Operation *op = value.getDefiningOp();
    if (!isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp,
                         memref::CastOp>(op))
      return Value();
    value = op->getOperand(0);
  }
  return value;
}

/// What an allocation holds everywhere, and the fill that wrote it.
struct KnownFill {
  linalg::FillOp fill;
  TypedAttr value;
};

/// Whether nothing but fills and deallocations uses `allocation`.
bool isWrittenOnly(Value allocation) {
  return llvm::all_of(allocation.getUsers(), [](Operation *user) {
    return isa<linalg::FillOp, memref::DeallocOp>(user);
  });
}

struct GdnGPUFoldFillsPass
    : gdn::impl::GdnGPUFoldFillsPassBase<GdnGPUFoldFillsPass> {
  void runOnOperation() override {
    getOperation().walk([&](Block *block) {
      if (!block->getParentOp()->getParentOfType<gpu::LaunchOp>() &&
          !isa<gpu::LaunchOp>(block->getParentOp()))
        foldInBlock(*block);
    });
  }

  /// The constant that `fill` writes over a whole allocation, or null.
  static TypedAttr wholeFillValue(linalg::FillOp fill) {
    Value target = fill.getDpsInits()[0];
    Attribute value;
    if (!isa<MemRefType>(target.getType()) ||
        !target.getDefiningOp<memref::AllocOp>() ||
        !matchPattern(fill.getInputs()[0], m_Constant(&value)))
      return TypedAttr();
    auto typed = dyn_cast<TypedAttr>(value);
    if (!typed ||
        typed.getType() != cast<MemRefType>(target.getType()).getElementType())
      return TypedAttr();
    return typed;
  }

  void foldInBlock(Block &block) {
    llvm::DenseMap<Value, KnownFill> known;
    SmallVector<linalg::FillOp> deadFills;
    // A use of an allocation that the rules below do not cover: its fill
    // is read as it is (or overwritten) and stays.
    auto forget = [&](Value allocation) { known.erase(allocation); };
    auto forgetOperandsOf = [&](Operation *op) {
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Value allocation = allocationOf(operand))
            forget(allocation);
      });
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto fill = dyn_cast<linalg::FillOp>(&op)) {
        if (fill.hasPureBufferSemantics()) {
          Value target = fill.getDpsInits()[0];
          if (Value allocation = allocationOf(target))
            forget(allocation);
          if (TypedAttr value = wholeFillValue(fill))
            known[target] = {fill, value};
          continue;
        }
      }
      if (auto copy = dyn_cast<memref::CopyOp>(&op)) {
        Value source = allocationOf(copy.getSource());
        auto it = source && source == copy.getSource() ? known.find(source)
                                                       : known.end();
        if (it != known.end()) {
          OpBuilder b(copy);
          auto fill = linalg::FillOp::create(b, copy.getLoc(),
                                             it->second.fill.getInputs()[0],
                                             copy.getTarget());
          copy.erase();
          if (Value target = allocationOf(fill.getDpsInits()[0]))
            forget(target);
          if (TypedAttr filled = wholeFillValue(fill))
            known[fill.getDpsInits()[0]] = {fill, filled};
          continue;
        }
      }
      if (auto reduction = dyn_cast<linalg::LinalgOp>(&op)) {
        if (reduction.hasPureBufferSemantics() && finalCombinerOf(reduction) &&
            !reduction->hasAttr(kReductionInitAttrName)) {
          Value init = wholeAllocationOf(reduction.getDpsInits()[0]);
          auto it = init ? known.find(init) : known.end();
          bool readElsewhere =
              llvm::any_of(reduction.getDpsInputs(), [&](Value input) {
                return allocationOf(input) == init;
              });
          if (it != known.end() && !readElsewhere) {
            reduction->setAttr(kReductionInitAttrName, it->second.value);
            deadFills.push_back(it->second.fill);
            known.erase(it);
            forgetOperandsOf(reduction);
            continue;
          }
        }
      }
      // Sizes and views of a buffer (memref.dim, subviews) do not read it;
      // the views' users are followed to the allocation.
      if (!isMemoryEffectFree(&op))
        forgetOperandsOf(&op);
    }
    for (linalg::FillOp fill : deadFills)
      fill.erase();
    // Fills whose buffers nobody reads any more (their copies became
    // fills of the targets).
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto fill = dyn_cast<linalg::FillOp>(&op);
      if (fill && fill.hasPureBufferSemantics() &&
          fill.getDpsInits()[0].getDefiningOp<memref::AllocOp>() &&
          isWrittenOnly(fill.getDpsInits()[0]))
        fill.erase();
    }
  }
};
} // namespace
