//===- KernelBuilders.h - scalar builders shared by the GPU kernels -------===//

#ifndef GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H
#define GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H

#include "gdn/Utils/TensorCoreBuilders.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// The buffer of a tensor operand: read-only, or written in place.
Value toBuffer(OpBuilder &b, Location loc, Value tensor, bool readOnly = true);

/// x * y + z as arith ops allowed to contract: NVPTX emits fma.rn.f32,
/// where math.fma would become a libdevice call.
Value multiplyAdd(OpBuilder &b, Location loc, Value x, Value y, Value z);

/// exp(x) = 2^(x log2 e) through the hardware's ex2.approx (max relative
/// error 2^-22). math.exp would become a libdevice call, and libdevice is
/// only linked when the CUDA toolkit is found in the environment.
Value exponential(OpBuilder &b, Location loc, Value x);

/// 2^x through ex2.approx (2^-inf = 0).
Value exponent2(OpBuilder &b, Location loc, Value x);

/// The gates of a Qwen-style layer from its raw projections, on f32
/// scalars: g = -exp(A_log) softplus(a + dt_bias) (softplus(x) = x above
/// 20, as PyTorch's) and beta = sigmoid(b), through ex2.approx and
/// lg2.approx (math.log1p would need libdevice, as math.exp would).
std::pair<Value, Value> gatesFromRaw(OpBuilder &b, Location loc, Value a,
                                     Value rawBeta, Value aLog, Value dtBias);

Value indexConstant(OpBuilder &b, Location loc, int64_t value);

/// The slot of a pool that an int32 index names, as an index, and whether
/// it names one of the pool's `slots` rows: -1, and anything else outside
/// [0, slots), reads a zero state and writes nothing.
std::pair<Value, Value> poolSlot(OpBuilder &b, Location loc, Value index,
                                 Value slots);

/// What a lane of an mma.sync kernel works with, from its thread id: its
/// warp; its accumulator rows' group (lane / 4) and its quad (lane % 4)
/// (PTX ISA, mma.m16n8k16); and the row (lane % 8) and column (8 x (lane
/// / 8 % 2), 8 x (lane / 16)) offsets of the address it gives ldmatrix.
struct MmaLane {
  Value warp, group, quad, matrixRow, matrixColumn, matrixHalf;
};
MmaLane mmaLaneOf(OpBuilder &b, Location loc, Value tid);

/// Makes the built body of `launch` run only where `condition` (a host i1,
/// the same for every thread) holds; otherwise the kernel returns at once.
/// Choices between kernels are made so, not by an scf.if in host code,
/// which would break the host code's one stream into synchronized pieces
/// (gpu-async-region), and a step into launches that a CUDA graph cannot
/// replay.
void runOnlyIf(gpu::LaunchOp launch, Value condition);

} // namespace mlir::gdn

#endif // GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H
