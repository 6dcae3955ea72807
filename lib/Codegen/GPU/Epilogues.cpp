//===- Epilogues.cpp - element-wise ops run where a reduction ends --------===//

#include "Epilogues.h"

#include "BufferViews.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::gdn;

Operation *mlir::gdn::nextMemoryOp(Operation *op) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    if (!isMemoryEffectFree(next) && !isa<memref::AllocOp>(next))
      return next;
  return nullptr;
}

linalg::LinalgOp mlir::gdn::epilogueOf(linalg::LinalgOp reduction,
                                       Operation *next) {
  auto epilogue = dyn_cast_or_null<linalg::LinalgOp>(next);
  int64_t rank = reduction.getNumLoops() - 1;
  if (!epilogue || !epilogue.hasPureBufferSemantics() ||
      epilogue.getNumLoops() != rank || epilogue.getNumReductionLoops() != 0 ||
      epilogue.getNumDpsInits() != 1)
    return nullptr;
  MLIRContext *context = reduction.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  OpOperand *result = reduction.getDpsInitOperand(0);
  if (reduction.getMatchingIndexingMap(result) !=
      AffineMap::getMultiDimIdentityMap(rank + 1, context).dropResult(rank))
    return nullptr;
  Value resultBuffer = bufferOf(result->get());
  OpOperand *written = epilogue.getDpsInitOperand(0);
  Value writtenBuffer = bufferOf(written->get());
  // In place over the reduction's output (an activation applied to it),
  // the output is what the epilogue reads.
  bool inPlace = written->get() == result->get();
  if (epilogue.getMatchingIndexingMap(written) != identity ||
      (!inPlace && epilogue.payloadUsesValueFromOperand(written)) ||
      (!inPlace && writtenBuffer == resultBuffer))
    return nullptr;
  for (OpOperand *read : reduction.getDpsInputOperands())
    if (bufferOf(read->get()) == writtenBuffer)
      return nullptr;
  bool readsResult = inPlace;
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    Value buffer = bufferOf(input->get());
    AffineMap map = epilogue.getMatchingIndexingMap(input);
    if (buffer == resultBuffer) {
      if (input->get() != result->get() || map != identity)
        return nullptr;
      readsResult = true;
    }
    if (buffer == writtenBuffer && buffer != resultBuffer &&
        (input->get() != written->get() || map != identity))
      return nullptr;
  }
  return readsResult ? epilogue : nullptr;
}

namespace {
/// The buffers `op` reads and writes; false for an op whose accesses are
/// not known here.
bool accessesOf(Operation *op, SmallVectorImpl<Value> &reads,
                SmallVectorImpl<Value> &writes) {
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    reads.push_back(bufferOf(copy.getSource()));
    writes.push_back(bufferOf(copy.getTarget()));
    return true;
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics())
    return false;
  // A body that reads memory of its own (a gather: the embedding, the
  // logits' rows) touches buffers its operands do not name.
  bool readsCaptured = false;
  linalgOp->walk([&](memref::LoadOp) { readsCaptured = true; });
  if (readsCaptured)
    return false;
  for (Value input : linalgOp.getDpsInputs())
    if (isa<MemRefType>(input.getType()))
      reads.push_back(bufferOf(input));
  for (Value init : linalgOp.getDpsInits()) {
    reads.push_back(bufferOf(init));
    writes.push_back(bufferOf(init));
  }
  return true;
}
} // namespace

linalg::LinalgOp mlir::gdn::findEpilogue(linalg::LinalgOp reduction) {
  SmallVector<Value> reductionReads, reductionWrites;
  if (!accessesOf(reduction, reductionReads, reductionWrites))
    return nullptr;
  for (Operation *next = nextMemoryOp(reduction); next;
       next = nextMemoryOp(next)) {
    if (linalg::LinalgOp epilogue = epilogueOf(reduction, next))
      return epilogue;
    // The reduction runs at the epilogue's place: past `next` only if
    // neither writes what the other touches.
    SmallVector<Value> reads, writes;
    if (!accessesOf(next, reads, writes))
      return nullptr;
    for (Value written : writes)
      if (llvm::is_contained(reductionReads, written))
        return nullptr;
    for (Value written : reductionWrites)
      if (llvm::is_contained(reads, written))
        return nullptr;
  }
  return nullptr;
}
