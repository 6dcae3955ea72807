//===- MemrefCopy.cpp - memref.copy of strided buffers on the CPU ---------===//
//
// The LLVM lowering of memref.copy between buffers that are not both
// contiguous calls `memrefCopy(elementBytes, source, target)` with unranked
// descriptors, a function MLIR provides in libmlir_c_runner_utils. That
// library needs libMLIR and libLLVM at run time; this implementation, linked
// statically into every CPU library and executable gdn-compile writes,
// keeps their run-time needs at libc, libstdc++, libm and libomp. Its
// symbol is hidden, so a process that also loads MLIR's keeps both apart.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>

namespace {
/// A ranked memref descriptor: pointers, offset, then `rank` sizes and
/// `rank` strides, in elements.
struct RankedDescriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

struct UnrankedDescriptor {
  int64_t rank;
  RankedDescriptor *descriptor;
};

/// The largest rank copied (MLIR's own limit is the same order; gdn's
/// buffers have rank 5 at most).
constexpr int64_t kMaxRank = 16;
} // namespace

extern "C" __attribute__((visibility("hidden"))) void
memrefCopy(int64_t elementBytes, UnrankedDescriptor *source,
           UnrankedDescriptor *target) {
  int64_t rank = source->rank;
  const RankedDescriptor &from = *source->descriptor;
  const RankedDescriptor &to = *target->descriptor;
  const char *read = from.aligned + from.offset * elementBytes;
  char *write = to.aligned + to.offset * elementBytes;
  if (rank == 0) {
    std::memcpy(write, read, elementBytes);
    return;
  }
  if (rank > kMaxRank)
    __builtin_trap();
  const int64_t *sizes = from.sizesAndStrides;
  const int64_t *readStrides = from.sizesAndStrides + rank;
  const int64_t *writeStrides = to.sizesAndStrides + rank;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return;
  // The innermost dimension goes in one memcpy where both sides are
  // contiguous along it.
  int64_t inner = rank - 1;
  bool contiguousRows = readStrides[inner] == 1 && writeStrides[inner] == 1;
  int64_t rowBytes = contiguousRows ? sizes[inner] * elementBytes
                                    : elementBytes;
  int64_t outerRank = contiguousRows ? inner : rank;
  int64_t index[kMaxRank] = {};
  while (true) {
    std::memcpy(write, read, rowBytes);
    // Odometer over the outer dimensions, innermost first.
    int64_t d = outerRank - 1;
    for (; d >= 0; --d) {
      read += readStrides[d] * elementBytes;
      write += writeStrides[d] * elementBytes;
      if (++index[d] < sizes[d])
        break;
      read -= readStrides[d] * sizes[d] * elementBytes;
      write -= writeStrides[d] * sizes[d] * elementBytes;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}
