//===- CudaCheck.h - checked driver calls of the CUDA runtime ---*- C++ -*-===//
//
// Every driver call of runtime/CUDA is checked: a failure prints the call,
// the CUDA error name and its description, and aborts, since the generated
// host code has no way to report an error.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_CUDA_CUDACHECK_H
#define GDN_RUNTIME_CUDA_CUDACHECK_H

#include <cuda.h>

namespace gdn::cuda {
[[noreturn]] void failedCall(const char *call, CUresult result);
} // namespace gdn::cuda

#define GDN_CUDA_CHECK(call)                                                   \
  do {                                                                         \
    CUresult result_ = (call);                                                 \
    if (result_ != CUDA_SUCCESS)                                               \
      ::gdn::cuda::failedCall(#call, result_);                                 \
  } while (false)

#endif // GDN_RUNTIME_CUDA_CUDACHECK_H
