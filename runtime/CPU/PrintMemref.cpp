//===- PrintMemref.cpp - printMemref* for executables ---------------------===//
//
// Executables print their results with the printMemref* functions of
// MLIR's runner utilities, in the same text format, so that the same
// FileCheck lines hold for CPU and CUDA executables and for mlir-runner.
// Debian's libmlir_runner_utils needs libMLIR and libLLVM, which a machine
// without MLIR lacks; these few functions keep an executable's needs at the
// C/C++ runtime (and, for CUDA, the driver's libcuda.so.1).
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <iostream>

namespace {
/// The descriptor behind an unranked memref of any rank: pointers, offset,
/// then `rank` sizes and `rank` strides.
struct RankedDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

struct UnrankedDescriptor {
  int64_t rank;
  RankedDescriptor *descriptor;
};

float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

float fromBF16(uint16_t bits) { return bitsToFloat(uint32_t(bits) << 16); }

float fromF16(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  int32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) // infinity or NaN
    return bitsToFloat(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return bitsToFloat(sign);
    // Subnormal: normalize into f32's range.
    exponent = 1;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ff;
  }
  return bitsToFloat(sign | uint32_t(exponent + 112) << 23 | mantissa << 13);
}

template <typename T> struct Element {
  static auto value(const T *data) { return *data; }
};
struct BF16Bits {
  uint16_t bits;
};
struct F16Bits {
  uint16_t bits;
};
template <> struct Element<BF16Bits> {
  static float value(const BF16Bits *data) { return fromBF16(data->bits); }
};
template <> struct Element<F16Bits> {
  static float value(const F16Bits *data) { return fromF16(data->bits); }
};

/// Prints dimension `dim` of `rank` onwards from `offset`: nested brackets,
/// elements separated by ", ", then a line break unless innermost, then as
/// many spaces as the depth of the next element.
template <typename T>
void printData(std::ostream &os, const T *base, int64_t dim, int64_t rank,
               int64_t offset, const int64_t *sizes, const int64_t *strides) {
  if (dim == rank) {
    os << Element<T>::value(base + offset);
    return;
  }
  os << "[";
  for (int64_t i = 0; i < sizes[dim]; ++i) {
    if (i > 0)
      os << ", " << (dim + 1 < rank ? "\n" : "") << std::string(dim + 1, ' ');
    printData(os, base, dim + 1, rank, offset + i * strides[dim], sizes,
              strides);
  }
  os << "]";
}

template <typename T> void printMemref(const UnrankedDescriptor *memref) {
  std::ostream &os = std::cout;
  int64_t rank = memref->rank;
  const RankedDescriptor *d = memref->descriptor;
  const int64_t *sizes = d->sizesAndStrides;
  const int64_t *strides = d->sizesAndStrides + rank;
  auto list = [&](const int64_t *values) {
    for (int64_t i = 0; i < rank; ++i)
      os << (i ? ", " : "") << values[i];
  };
  os << "Unranked Memref base@ = " << d->aligned << " rank = " << rank
     << " offset = " << d->offset << " sizes = [";
  list(sizes);
  os << "] strides = [";
  list(strides);
  os << "] data = \n";
  if (rank == 0)
    os << "[";
  printData(os, static_cast<const T *>(d->aligned), 0, rank, d->offset, sizes,
            strides);
  if (rank == 0)
    os << "]";
  os << '\n' << std::flush;
}
} // namespace

// Both calling conventions: the C interface (a pointer to the unranked
// descriptor) and the plain one (rank and descriptor pointer).
#define GDN_PRINT_MEMREF(SUFFIX, TYPE)                                         \
  extern "C" void _mlir_ciface_printMemref##SUFFIX(                            \
      UnrankedDescriptor *memref) {                                            \
    printMemref<TYPE>(memref);                                                 \
  }                                                                            \
  extern "C" void printMemref##SUFFIX(int64_t rank, void *descriptor) {        \
    UnrankedDescriptor memref{rank,                                            \
                              static_cast<RankedDescriptor *>(descriptor)};    \
    printMemref<TYPE>(&memref);                                                \
  }

GDN_PRINT_MEMREF(F32, float)
GDN_PRINT_MEMREF(F64, double)
GDN_PRINT_MEMREF(I32, int32_t)
GDN_PRINT_MEMREF(I64, int64_t)
GDN_PRINT_MEMREF(F16, F16Bits)
GDN_PRINT_MEMREF(BF16, BF16Bits)
