//===- WideLanes.h - lanes that read rows in vectors ------------*- C++ -*-===//
//
// A warp per output row (a projection's dot product, a norm, a softmax)
// reads the row along the op's last loop dimension. Lanes that read one
// element each keep one 64- or 128-byte transaction per warp in flight
// and wait a memory latency per step: a decode step's projections ran at
// a fiftieth of the bandwidth. Wide lanes read `width` consecutive
// elements each (16 bytes of the narrowest type), `unroll` steps at once,
// so a warp has a whole row of a 768-wide bf16 matrix in flight. Elements
// past the last whole vector are read one per lane.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_GPU_WIDELANES_H
#define GDN_LIB_CODEGEN_GPU_WIDELANES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::gdn {

/// The indices `map` gives for the loop indices `dims`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange dims);

/// How a lane walks its row: `width` consecutive elements per step
/// (1: one element, no vectors), `unroll` steps per iteration.
struct LaneWalk {
  int64_t width = 1;
  int64_t unroll = 1;
};

/// The widest walk that every op of `ops` allows over its last loop
/// dimension: each memref input (and output, for an op that writes a
/// row) reads along that dimension with unit stride in its last index
/// and with nothing else, or does not depend on it; the payload is
/// element-wise ops and constants. `givenFor` is an input the caller
/// supplies as a scalar (a row's total). Width 1 when any op refuses.
LaneWalk laneWalkOf(ArrayRef<linalg::LinalgOp> ops, Value givenFor = Value());

/// Whether every row that `walk` reads or writes in vectors starts at a
/// 16-byte boundary, as an i1 computed where the rows are walked: the
/// buffers' addresses and strides are only known at run time.
Value rowsAreAligned(OpBuilder &b, Location loc, ArrayRef<linalg::LinalgOp> ops,
                     Value givenFor = Value());

/// One step of a wide walk: for each start, the payload over the `width`
/// elements from it; the iteration values in and out.
using WideSteps = function_ref<SmallVector<Value>(
    OpBuilder &, Location, ArrayRef<Value> starts, ValueRange)>;
/// One element of the rest.
using NarrowStep =
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>;

/// Walks the elements [0, length) that `lane` of a warp handles: whole
/// vectors of `walk.width` elements, lanes `walk.width` elements apart
/// (`walk.unroll` vectors per iteration, then one per iteration), then
/// the elements past the last whole vector one per lane. Returns the
/// iteration values.
SmallVector<Value> walkLane(OpBuilder &b, Location loc, Value lane,
                            Value length, LaneWalk walk, ValueRange inits,
                            WideSteps wide, NarrowStep narrow);

/// The inputs of `op` at the loop indices `dims` (the last one the start
/// of a vector), as vectors of `width` elements: loaded along the last
/// dimension, or broadcast where they do not depend on it (`given` for
/// `givenFor`). Maps the payload's block arguments.
IRMapping loadWideInputs(OpBuilder &b, Location loc, linalg::LinalgOp op,
                         ValueRange dims, int64_t width,
                         Value givenFor = Value(), Value given = Value());

/// `op`'s payload cloned on vectors of `width` elements, every op but
/// `skip`, after loadWideInputs; values from outside it are broadcast.
void cloneWidePayload(OpBuilder &b, Location loc, linalg::LinalgOp op,
                      IRMapping &mapping, int64_t width,
                      Operation *skip = nullptr);

/// Stores `value` (a vector of `width` elements, or a scalar for all of
/// them) at the output indices of `dims`.
void storeWideOutput(OpBuilder &b, Location loc, linalg::LinalgOp op,
                     Value value, ValueRange dims, int64_t width);

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_GPU_WIDELANES_H
