// The hand-over of the chunked scan's state kernel, alone: two copy warps
// keep a double buffer of 64 x 128 bf16 tiles filled by cp.async while four
// compute warps read the other slot with ldmatrix, both roles meeting at
// the unaligned `barrier.sync 1, 192` once per chunk; the compute warps
// also synchronise among themselves with `bar.sync 2, 128`. Run under
// `compute-sanitizer --tool racecheck` to see whether the tool reports
// hazards for this pattern by itself (see README.md).
//
//   handover <variant> <blocks> <chunks>
//
// variants: ldmatrix-trans (the state kernel's K^T read), ldmatrix, lds
// (plain 16-byte loads), and no-compute-barrier (ldmatrix-trans without the
// compute warps' own barrier).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

namespace {
constexpr int kRows = 64, kCols = 128;             // one slot, bf16
constexpr int kSlotHalves = kRows * kCols;
constexpr int kComputeThreads = 128, kCopyThreads = 64;
constexpr int kThreads = kComputeThreads + kCopyThreads;

enum Variant { LdmatrixTrans, Ldmatrix, Lds, NoComputeBarrier };

__device__ void copyChunk(const unsigned short *source, unsigned short *slot,
                          int thread) {
  // 16 bytes (8 halves) per copy, 1024 copies per slot.
  for (int v = thread; v < kSlotHalves / 8; v += kCopyThreads) {
    unsigned address =
        static_cast<unsigned>(__cvta_generic_to_shared(slot + v * 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address),
                 "l"(__cvta_generic_to_global(source + v * 8)));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

__device__ unsigned readTile(const unsigned short *slot, int lane, int step,
                             Variant variant) {
  // Matrix m (lanes 8m..8m+7) of an x4 load: rows r0..r0+7, 8 columns.
  int matrix = lane / 8, row = (step * 8) % kRows + lane % 8;
  int col = (matrix * 8 + (step / 8) * 32) % kCols;
  const unsigned short *at = slot + row * kCols + col;
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(at));
  unsigned a, b, c, d;
  if (variant == Lds) {
    uint4 v = *reinterpret_cast<const uint4 *>(at);
    return v.x ^ v.y ^ v.z ^ v.w;
  }
  if (variant == Ldmatrix)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, "
                 "[%4];\n"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "r"(address));
  return a ^ b ^ c ^ d;
}

__global__ void handover(const unsigned short *chunks, unsigned *out,
                         int count, Variant variant) {
  extern __shared__ __align__(128) unsigned short slots[];
  int tid = threadIdx.x;
  const unsigned short *sequence =
      chunks + static_cast<size_t>(blockIdx.x) * count * kSlotHalves;
  if (tid >= kComputeThreads) {
    int thread = tid - kComputeThreads;
    copyChunk(sequence, slots, thread);
    for (int i = 0; i < count; ++i) {
      asm volatile("cp.async.wait_group 0;\n" ::);
      asm volatile("barrier.sync 1, %0;\n" ::"n"(kThreads));
      if (i + 1 < count)
        copyChunk(sequence + (i + 1) * kSlotHalves,
                  slots + ((i + 1) % 2) * kSlotHalves, thread);
    }
    return;
  }
  int warp = tid / 32, lane = tid % 32;
  unsigned sum = 0;
  for (int i = 0; i < count; ++i) {
    asm volatile("barrier.sync 1, %0;\n" ::"n"(kThreads));
    const unsigned short *slot = slots + (i % 2) * kSlotHalves;
    // Three phases over the slot, as the products of the state kernel.
    for (int phase = 0; phase < 3; ++phase) {
      for (int step = warp; step < 64; step += 4)
        sum += readTile(slot, lane, step, variant);
      if (variant != NoComputeBarrier)
        asm volatile("bar.sync 2, %0;\n" ::"n"(kComputeThreads));
    }
  }
  out[blockIdx.x * kComputeThreads + tid] = sum;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ldmatrix-trans|ldmatrix|lds|"
                         "no-compute-barrier <blocks> <chunks>\n",
                 argv[0]);
    return 2;
  }
  Variant variant = !std::strcmp(argv[1], "ldmatrix")    ? Ldmatrix
                    : !std::strcmp(argv[1], "lds")       ? Lds
                    : !std::strcmp(argv[1], "no-compute-barrier")
                        ? NoComputeBarrier
                        : LdmatrixTrans;
  int blocks = std::atoi(argv[2]), count = std::atoi(argv[3]);
  size_t halves = static_cast<size_t>(blocks) * count * kSlotHalves;
  unsigned short *chunks;
  unsigned *out;
  size_t shared = 2 * kSlotHalves * sizeof(unsigned short);
  if (cudaMalloc(&chunks, halves * 2) || cudaMalloc(&out, blocks * 512) ||
      cudaMemset(chunks, 1, halves * 2) ||
      cudaFuncSetAttribute(handover,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(shared))) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  handover<<<blocks, kThreads, shared>>>(chunks, out, count, variant);
  cudaError_t status = cudaDeviceSynchronize();
  std::printf("%s blocks=%d chunks=%d: %s\n", argv[1], blocks, count,
              cudaGetErrorString(status));
  return status == cudaSuccess ? 0 : 1;
}
