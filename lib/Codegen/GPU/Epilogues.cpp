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
  if (epilogue.getMatchingIndexingMap(written) != identity ||
      epilogue.payloadUsesValueFromOperand(written))
    return nullptr;
  for (OpOperand *read : reduction.getDpsInputOperands())
    if (bufferOf(read->get()) == writtenBuffer)
      return nullptr;
  bool readsResult = false;
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
  if (writtenBuffer == resultBuffer && written->get() != result->get())
    return nullptr;
  return readsResult ? epilogue : nullptr;
}
