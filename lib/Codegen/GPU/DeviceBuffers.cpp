//===- DeviceBuffers.cpp - host code that only launches kernels -----------===//
//
// A compiled model's step runs on the device from end to end: its
// arguments (ids, caches, weights) and results are device buffers, and so
// must be every temporary. Host buffers become device allocations
// (gpu.alloc, from the runtime's memory pool once gpu-async-region has put
// them in stream order with the launches), each freed after the last op
// that uses it or a view of it. The pass then checks what
// is left: host code may take views and sizes of buffers and pass them to
// kernels, and must never read or write their elements (that would be a
// host access to device memory, or a copy per step).
//
// The frees are placed here rather than by ownership-based buffer
// deallocation, which refuses the IR at this point: gpu.launch_func and
// gpu.wait declare no memory effects, and the chunked scan already frees
// its own scratch with gpu.dealloc. Host code after bufferization is one
// straight-line block, where the last use is a position in that block.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUDEVICEBUFFERSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
bool isBuffer(Value v) { return isa<BaseMemRefType>(v.getType()); }

/// Ops whose buffer results alias a buffer operand.
bool isView(Operation *op) {
  return isa<ViewLikeOpInterface, memref::CastOp>(op);
}

/// Host ops that handle buffers without touching their elements.
bool touchesNoElements(Operation *op) {
  return isView(op) ||
         isa<memref::DimOp, memref::ExtractStridedMetadataOp,
             memref::ExtractAlignedPointerAsIndexOp, memref::AllocOp,
             func::ReturnOp, func::CallOp>(op) ||
         isa_and_nonnull<gpu::GPUDialect>(op->getDialect());
}

/// The op of `block` after which `buffer` is dead, or null if it escapes
/// (returned or passed to a call, through any view). Uses inside a nested
/// region (a gpu.launch body) count at the op of `block` holding them.
FailureOr<Operation *> lastUse(Block &block, Value buffer) {
  Operation *last = buffer.getDefiningOp();
  SmallVector<Value> aliases = {buffer};
  while (!aliases.empty()) {
    Value value = aliases.pop_back_val();
    for (Operation *user : value.getUsers()) {
      Operation *owner = block.findAncestorOpInBlock(*user);
      if (!owner)
        return failure();
      if (isa<func::ReturnOp, func::CallOp>(owner))
        return static_cast<Operation *>(nullptr);
      if (last->isBeforeInBlock(owner))
        last = owner;
      if (owner == user && isView(user))
        llvm::append_range(aliases,
                           llvm::make_filter_range(user->getResults(),
                                                   isBuffer));
    }
  }
  return last;
}

struct GdnGPUDeviceBuffersPass
    : gdn::impl::GdnGPUDeviceBuffersPassBase<GdnGPUDeviceBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    Block &entry = function.getBody().front();
    bool failed = false;
    SmallVector<memref::AllocOp> allocs;
    function.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        allocs.push_back(alloc);
        return WalkResult::advance();
      }
      if (touchesNoElements(op) || !(llvm::any_of(op->getOperands(),
                                                  isBuffer) ||
                                     llvm::any_of(op->getResults(), isBuffer)))
        return WalkResult::advance();
      op->emitOpError() << "accesses a buffer in host code, where every "
                           "buffer is device memory: everything must run "
                           "in kernels (a CUDA library's functions take "
                           "device buffers; host code with constants or "
                           "prints, such as a @main, belongs in --emit=exe, "
                           "where buffers are managed memory)";
      failed = true;
      return WalkResult::advance();
    });
    if (failed)
      return signalPassFailure();

    for (memref::AllocOp alloc : allocs) {
      Location loc = alloc.getLoc();
      if (alloc.getResult().use_empty()) {
        rewriter.eraseOp(alloc);
        continue;
      }
      if (alloc->getBlock() != &entry) {
        alloc.emitOpError("in a nested region of host code: the step's "
                          "host code must be straight-line");
        return signalPassFailure();
      }
      FailureOr<Operation *> last = lastUse(entry, alloc.getResult());
      if (::mlir::failed(last)) {
        alloc.emitOpError("is used outside its function's body");
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(alloc);
      auto device = gpu::AllocOp::create(
          rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
          /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
          alloc.getSymbolOperands(), /*hostShared=*/false);
      rewriter.replaceOp(alloc, device.getMemref());
      if (*last == nullptr)
        continue; // the caller's now
      rewriter.setInsertionPointAfter(*last);
      gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(),
                             /*asyncDependencies=*/ValueRange(),
                             device.getMemref());
    }
  }
};
} // namespace
