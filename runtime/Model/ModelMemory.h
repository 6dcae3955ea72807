//===- ModelMemory.h - where a compiled model keeps its buffers -*- C++ -*-===//
//
// The model runtime is the same for both targets; only the memory of its
// buffers (weights, caches, logits, token ids) differs: host memory for
// CPU builds (HostMemory.cpp), CUDA managed memory for CUDA builds
// (CudaMemory.cpp), which the step's kernels read and write on the device
// and the runtime reads on the host (the logits, the numerics check). The
// pages of a buffer the host does not touch stay on the device.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_MODEL_MODELMEMORY_H
#define GDN_RUNTIME_MODEL_MODELMEMORY_H

#include <cstddef>
#include <string>

namespace gdn::model {
/// Why buffers cannot be had at all (no CUDA device, no driver), or empty.
std::string memoryUnavailable();
/// `bytes` (at least one) of memory the step can use, or nullptr; then
/// memoryError() says why.
void *allocateBytes(size_t bytes);
void freeBytes(void *pointer);
/// The reason of the last failed allocation on this thread, or empty.
std::string memoryError();
/// Whether the step can read the weights where the file is mapped; if not,
/// they are copied into allocateBytes memory at load.
bool stepReadsMappedFiles();
/// Waits for the step's work on the device, before the host reads results.
void finishStep();
/// The device the step runs on, for people ("CPU", "NVIDIA H200 (CUDA
/// device 0)").
std::string deviceName();
} // namespace gdn::model

#endif // GDN_RUNTIME_MODEL_MODELMEMORY_H
