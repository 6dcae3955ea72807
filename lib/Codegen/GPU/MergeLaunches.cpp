//===- MergeLaunches.cpp - independent kernels share one launch -----------===//
//
// A decode step at batch 1 is hundreds of small kernels, each taking a few
// microseconds whatever its size: the GPU waits for one kernel to drain
// before the next one starts. Many of them do not depend on each other
// (the projections of one normalised input, the element-wise work of the
// q, k and v branches). Two such kernels can be one launch whose grid is
// both grids end to end: a block runs the first body when its index falls
// in the first grid, the second body otherwise. The launch takes the place
// of the later kernel; what the earlier one did moves down to it, which
// is exact when neither kernel touches a buffer the other writes, and no
// op in between touches a buffer the earlier kernel writes or writes one
// it reads.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "gdn/ABI/Passes.h"

#include "BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUMERGELAUNCHESPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// How an op touches one buffer.
struct Access {
  bool read = false;
  bool write = false;
};

/// The buffers an op touches, by the value behind their views; nullopt
/// where that is not known (an effect on no particular value, an op that
/// says nothing of its effects).
using Footprint = llvm::SmallDenseMap<Value, Access, 8>;

/// NVVM's address space of workgroup (shared) memory.
constexpr unsigned kSharedAddressSpace = 3;

bool isAllocation(Value buffer) {
  return buffer.getDefiningOp<memref::AllocOp>() ||
         buffer.getDefiningOp<memref::AllocaOp>() ||
         buffer.getDefiningOp<gpu::AllocOp>();
}

/// Records `effect` (a read, or anything else as a write) on `buffer`.
void record(Footprint &footprint, Value buffer,
            const MemoryEffects::EffectInstance &effect) {
  Access &access = footprint[buffer];
  if (isa<MemoryEffects::Read>(effect.getEffect()))
    access.read = true;
  else
    access.write = true;
}

/// The effects of `op` that touch memory (allocating a buffer touches none).
SmallVector<MemoryEffects::EffectInstance>
accessEffects(MemoryEffectOpInterface op) {
  SmallVector<MemoryEffects::EffectInstance> instances;
  op.getEffects(instances);
  llvm::erase_if(instances, [](const MemoryEffects::EffectInstance &instance) {
    return isa<MemoryEffects::Allocate>(instance.getEffect());
  });
  return instances;
}

/// Adds what `op` does to `operand` (a memref) to `footprint`; an op that
/// says nothing of its effects reads and writes it.
void addAccess(Operation *op, OpOperand &operand, Footprint &footprint) {
  Value buffer = bufferOf(operand.get());
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    Access &access = footprint[buffer];
    access.read = access.write = true;
    return;
  }
  for (const MemoryEffects::EffectInstance &instance : accessEffects(effects)) {
    Value on = instance.getValue();
    if (!on || on == operand.get())
      record(footprint, buffer, instance);
  }
}

/// Whether a launch's body can run as part of a larger grid: one block,
/// its block index taken only from the launch's arguments, no shared
/// memory (two kernels' shared memory would add up), and its buffers known.
bool isMergeable(gpu::LaunchOp launch) {
  if (!launch.getBody().hasOneBlock() || launch.getDynamicSharedMemorySize() ||
      launch.hasClusterSize() || !launch.getAsyncDependencies().empty() ||
      launch.getAsyncToken() || launch.getNumWorkgroupAttributions() != 0 ||
      launch.getNumPrivateAttributions() != 0)
    return false;
  auto isWorkgroup = [](Type type) {
    auto memref = dyn_cast<MemRefType>(type);
    return memref && gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(memref);
  };
  WalkResult result = launch.getBody().walk([&](Operation *op) {
    // A call may reach buffers that are not its operands.
    if (isa<gpu::BlockIdOp, gpu::GridDimOp, gpu::GlobalIdOp, gpu::ClusterIdOp,
            gpu::ClusterDimOp, gpu::ClusterBlockIdOp, gpu::ClusterDimBlocksOp,
            gpu::DynamicSharedMemoryOp, LLVM::IntToPtrOp, LLVM::InlineAsmOp,
            CallOpInterface>(op))
      return WalkResult::interrupt();
    StringRef name = op->getName().getStringRef();
    if (name.starts_with("nvvm.read.ptx.sreg.ctaid") ||
        name.starts_with("nvvm.read.ptx.sreg.nctaid") ||
        name.starts_with("nvvm.read.ptx.sreg.cluster"))
      return WalkResult::interrupt();
    if (llvm::any_of(op->getResultTypes(), isWorkgroup) ||
        llvm::any_of(op->getOperandTypes(), isWorkgroup) ||
        llvm::any_of(op->getOperandTypes(),
                     llvm::IsaPred<LLVM::LLVMPointerType>))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// The footprint of a launch's body on buffers from outside it; nullopt
/// where some access cannot be told.
std::optional<Footprint> launchFootprint(gpu::LaunchOp launch) {
  Footprint footprint;
  Region &body = launch.getBody();
  auto isGlobalPointer = [](Type type) {
    auto pointer = dyn_cast<LLVM::LLVMPointerType>(type);
    return pointer && pointer.getAddressSpace() != kSharedAddressSpace;
  };
  WalkResult result = body.walk([&](Operation *op) {
    // Memory reached other than through memref operands is not followed.
    if (isa<CallOpInterface, LLVM::IntToPtrOp, LLVM::InlineAsmOp>(op) ||
        llvm::any_of(op->getOperandTypes(), isGlobalPointer))
      return WalkResult::interrupt();
    if (isa<ViewLikeOpInterface>(op))
      return WalkResult::advance();
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      Value buffer = bufferOf(operand.get());
      if (body.isAncestor(buffer.getParentRegion())) {
        // The body's own (private) buffers are its business; a buffer that
        // comes through a loop's iteration argument is not followed.
        if (buffer.getDefiningOp<memref::AllocaOp>())
          continue;
        return WalkResult::interrupt();
      }
      addAccess(op, operand, footprint);
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return std::nullopt;
  return footprint;
}

/// The footprint of a host op a launch may move past; nullopt where it is
/// not known (a call, a loop, an effect on no buffer in particular or
/// through a pointer).
std::optional<Footprint> hostFootprint(Operation *op) {
  if (auto launch = dyn_cast<gpu::LaunchOp>(op))
    return launchFootprint(launch);
  if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
    return Footprint();
  if (op->getNumRegions() != 0 || isa<CallOpInterface>(op))
    return std::nullopt;
  Footprint footprint;
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
    for (const MemoryEffects::EffectInstance &instance :
         accessEffects(effects)) {
      Value on = instance.getValue();
      if (!on || !isa<MemRefType>(on.getType()))
        return std::nullopt;
      record(footprint, bufferOf(on), instance);
    }
    return footprint;
  }
  // A kernel launched by name reaches the buffers it is given, when they
  // are all given as memrefs.
  if (!isa<gpu::LaunchFuncOp>(op) ||
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<LLVM::LLVMPointerType>))
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      addAccess(op, operand, footprint);
  return footprint;
}

/// Which buffers may be the same memory.
class BufferAliases {
public:
  explicit BufferAliases(func::FuncOp func) : entry(&func.front()) {
    if (auto list =
            func->getAttrOfType<DenseI64ArrayAttr>(kInPlaceArgumentsAttrName))
      for (int64_t index : list.asArrayRef())
        if (index >= 0 && index < func.getNumArguments())
          distinctArguments.insert(func.getArgument(index));
  }

  bool mayAlias(Value a, Value b) const {
    if (a == b)
      return true;
    // A buffer that is neither an allocation nor an argument (a select of
    // two, a loop's iteration argument) may be any of them.
    if (!isKnownBuffer(a) || !isKnownBuffer(b))
      return true;
    if (isAllocation(a) || isAllocation(b))
      return false;
    return !distinctArguments.contains(a) && !distinctArguments.contains(b);
  }

  bool conflict(const Footprint &first, const Footprint &second) const {
    for (const auto &[a, accessA] : first)
      for (const auto &[b, accessB] : second)
        if ((accessA.write || accessB.write) && mayAlias(a, b))
          return true;
    return false;
  }

private:
  bool isKnownBuffer(Value buffer) const {
    auto arg = dyn_cast<BlockArgument>(buffer);
    return isAllocation(buffer) || (arg && arg.getOwner() == entry);
  }

  Block *entry;
  llvm::SmallDenseSet<Value, 16> distinctArguments;
};

void merge(Footprint &into, const Footprint &from) {
  for (const auto &[buffer, access] : from) {
    Access &merged = into[buffer];
    merged.read |= access.read;
    merged.write |= access.write;
  }
}

bool sameValue(Value a, Value b) {
  if (a == b)
    return true;
  std::optional<int64_t> ca = getConstantIntValue(a);
  std::optional<int64_t> cb = getConstantIntValue(b);
  return ca && cb && *ca == *cb;
}

bool sameBlockSize(gpu::LaunchOp a, gpu::LaunchOp b) {
  return sameValue(a.getBlockSizeX(), b.getBlockSizeX()) &&
         sameValue(a.getBlockSizeY(), b.getBlockSizeY()) &&
         sameValue(a.getBlockSizeZ(), b.getBlockSizeZ());
}

/// Number of blocks of `launch`'s grid, computed before `builder`'s point.
Value gridBlocks(OpBuilder &builder, Location loc, gpu::LaunchOp launch) {
  Value blocks = launch.getGridSizeX();
  for (Value dim : {launch.getGridSizeY(), launch.getGridSizeZ()})
    if (!isConstantIntValue(dim, 1))
      blocks = arith::MulIOp::create(builder, loc, blocks, dim);
  return blocks;
}

/// Clones `launch`'s body at `builder`'s point as the block of linear index
/// `block` in its grid, on the threads of `merged`.
void cloneBody(OpBuilder &builder, Location loc, gpu::LaunchOp launch,
               gpu::LaunchOp merged, Value block) {
  IRMapping mapping;
  gpu::KernelDim3 grid = launch.getGridSize();
  gpu::KernelDim3 gridArgs = launch.getGridSizeOperandValues();
  gpu::KernelDim3 ids = launch.getBlockIds();
  Value x = block;
  Value y = arith::ConstantIndexOp::create(builder, loc, 0);
  Value z = y;
  if (!isConstantIntValue(gridArgs.y, 1) ||
      !isConstantIntValue(gridArgs.z, 1)) {
    x = arith::RemUIOp::create(builder, loc, block, gridArgs.x);
    Value rest = arith::DivUIOp::create(builder, loc, block, gridArgs.x);
    y = arith::RemUIOp::create(builder, loc, rest, gridArgs.y);
    z = arith::DivUIOp::create(builder, loc, rest, gridArgs.y);
  }
  mapping.map(ids.x, x);
  mapping.map(ids.y, y);
  mapping.map(ids.z, z);
  mapping.map(grid.x, gridArgs.x);
  mapping.map(grid.y, gridArgs.y);
  mapping.map(grid.z, gridArgs.z);
  gpu::KernelDim3 threads = launch.getThreadIds();
  gpu::KernelDim3 mergedThreads = merged.getThreadIds();
  mapping.map(threads.x, mergedThreads.x);
  mapping.map(threads.y, mergedThreads.y);
  mapping.map(threads.z, mergedThreads.z);
  gpu::KernelDim3 sizes = launch.getBlockSize();
  gpu::KernelDim3 mergedSizes = merged.getBlockSize();
  mapping.map(sizes.x, mergedSizes.x);
  mapping.map(sizes.y, mergedSizes.y);
  mapping.map(sizes.z, mergedSizes.z);
  for (Operation &op : launch.getBody().front().without_terminator())
    builder.clone(op, mapping);
}

/// One launch at `second`'s place that runs `first`'s grid, then
/// `second`'s.
gpu::LaunchOp mergeLaunches(gpu::LaunchOp first, gpu::LaunchOp second) {
  OpBuilder builder(second);
  Location loc = builder.getFusedLoc({first.getLoc(), second.getLoc()});
  Value firstBlocks = gridBlocks(builder, loc, first);
  Value secondBlocks = gridBlocks(builder, loc, second);
  Value blocks = arith::AddIOp::create(builder, loc, firstBlocks, secondBlocks);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto merged = gpu::LaunchOp::create(
      builder, loc, blocks, one, one, second.getBlockSizeX(),
      second.getBlockSizeY(), second.getBlockSizeZ());
  Block &body = merged.getBody().front();
  builder.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(builder, loc);
  builder.setInsertionPoint(terminator);
  Value block = merged.getBlockIds().x;
  Value inFirst = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult,
                                        block, firstBlocks);
  auto branch = scf::IfOp::create(builder, loc, inFirst,
                                  /*withElseRegion=*/true);
  builder.setInsertionPoint(branch.thenBlock()->getTerminator());
  cloneBody(builder, first.getLoc(), first, merged, block);
  builder.setInsertionPoint(branch.elseBlock()->getTerminator());
  Value secondBlock =
      arith::SubIOp::create(builder, second.getLoc(), block, firstBlocks);
  cloneBody(builder, second.getLoc(), second, merged, secondBlock);
  first.erase();
  second.erase();
  return merged;
}

struct GdnGPUMergeLaunchesPass
    : gdn::impl::GdnGPUMergeLaunchesPassBase<GdnGPUMergeLaunchesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BufferAliases aliases(func);
    SmallVector<Block *> blocks;
    func.walk([&](Block *block) {
      if (llvm::any_of(*block, llvm::IsaPred<gpu::LaunchOp>))
        blocks.push_back(block);
    });
    for (Block *block : blocks)
      mergeInBlock(*block, aliases);
  }

  /// Walks `block`'s launches in order; each takes in the earlier ones it
  /// can, nearest first, within `window` launches back.
  void mergeInBlock(Block &block, const BufferAliases &aliases) {
    DenseMap<Operation *, std::optional<Footprint>> footprints;
    DenseMap<Operation *, bool> mergeable;
    auto footprintOf = [&](Operation *op) -> const std::optional<Footprint> & {
      auto it = footprints.find(op);
      if (it == footprints.end())
        it = footprints.try_emplace(op, hostFootprint(op)).first;
      return it->second;
    };
    auto isMergeableLaunch = [&](gpu::LaunchOp launch) {
      auto it = mergeable.find(launch);
      if (it == mergeable.end())
        it = mergeable.try_emplace(launch, isMergeable(launch)).first;
      return it->second;
    };
    for (Operation *op = &block.front(); op; op = op->getNextNode()) {
      auto launch = dyn_cast<gpu::LaunchOp>(op);
      if (!launch || !isMergeableLaunch(launch) || !footprintOf(launch))
        continue;
      Footprint current = *footprintOf(launch);
      Footprint between;
      unsigned seen = 0;
      for (Operation *back = launch->getPrevNode(); back && seen < window;) {
        Operation *previous = back->getPrevNode();
        const std::optional<Footprint> &effects = footprintOf(back);
        if (!effects)
          break;
        auto earlier = dyn_cast<gpu::LaunchOp>(back);
        if (earlier)
          ++seen;
        if (earlier && isMergeableLaunch(earlier) &&
            sameBlockSize(earlier, launch) &&
            !aliases.conflict(*effects, current) &&
            !aliases.conflict(*effects, between)) {
          merge(current, *effects);
          for (Operation *gone : {back, op}) {
            footprints.erase(gone);
            mergeable.erase(gone);
          }
          launch = mergeLaunches(earlier, launch);
          op = launch;
          footprints[op] = current;
          mergeable[op] = true;
          ++mergedLaunches;
        } else {
          merge(between, *effects);
        }
        back = previous;
      }
    }
  }
};
} // namespace
