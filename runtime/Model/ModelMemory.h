//===- ModelMemory.h - where a compiled model keeps its buffers -*- C++ -*-===//
//
// The model runtime is the same for both targets; only the memory of its
// buffers (weights, caches, logits, token ids) differs: host memory for
// CPU builds (HostMemory.cpp), device memory for CUDA builds
// (CudaMemory.cpp). The runtime never dereferences a step buffer itself: it
// moves bytes in and out through the copies below, so that on a GPU only
// what the host asks for crosses the bus (the token ids in, the logits
// out when they are read), and nothing migrates behind the step's back.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_MODEL_MODELMEMORY_H
#define GDN_RUNTIME_MODEL_MODELMEMORY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gdn::model {
/// Why buffers cannot be had at all (no CUDA device, no driver), or empty.
std::string memoryUnavailable();
/// Prepares the process's allocator for the step's temporaries, once per
/// process: on a CPU, glibc keeps freed blocks of up to 32 MiB for reuse
/// instead of returning them to the system, which would fault each page of
/// the next step's temporaries in again (GDN_MALLOC_DEFAULTS=1 leaves
/// glibc's settings alone). Nothing on a GPU, whose temporaries are device
/// memory.
void prepareStepAllocations();
/// `bytes` (at least one) of memory the step can use, or nullptr; then
/// memoryError() says why.
void *allocateBytes(size_t bytes);
void freeBytes(void *pointer);
/// `bytes` (at least one) of host memory that step memory is copied into
/// quickly (page-locked on a GPU), or nullptr; then memoryError() says why.
void *allocateHostBytes(size_t bytes);
void freeHostBytes(void *pointer);
/// The reason of the last failed allocation or copy on this thread, or
/// empty.
std::string memoryError();
/// Whether step memory is host memory (a CPU build): then the host may read
/// it in place, and the copies are plain memcpy.
bool stepMemoryIsHost();
/// Copies between host memory and step memory, and within step memory,
/// ordered after the work of earlier steps and before that of later ones; a
/// host source may be reused, and a host destination read, as soon as the
/// call returns. False on failure (memoryError() says why).
bool copyToStep(void *stepDestination, const void *hostSource, size_t bytes);
bool copyFromStep(void *hostDestination, const void *stepSource, size_t bytes);
bool copyWithinStep(void *stepDestination, const void *stepSource,
                    size_t bytes);
bool zeroStepBytes(void *stepDestination, size_t bytes);
/// Whether the step can read the weights where the file is mapped; if not,
/// they are copied into allocateBytes memory at load.
bool stepReadsMappedFiles();
/// Waits for the step's work on the device, before the host reads results.
void finishStep();
/// Decode steps run from a recording of the step's work, one per batch
/// size: on a GPU, a CUDA graph (gdn/Runtime/CudaStepGraph.h) instead of
/// about 400 launches from the host; on a CPU there is none (makeStepReplays
/// returns null).
class StepReplays {
public:
  virtual ~StepReplays() = default;
  /// Runs `step(descriptors)`, a step of `batch` sequences, through the
  /// recording of that batch size; false if it did not run (a step the
  /// recording cannot hold), and the caller runs it directly.
  virtual bool run(int64_t batch, void (*step)(void **),
                   void **descriptors) = 0;
  /// Recordings made, replays, and kernels whose arguments a replay
  /// updated, over all batch sizes.
  virtual void counts(int64_t &recorded, int64_t &replayed,
                      int64_t &updated) const = 0;
};
std::unique_ptr<StepReplays> makeStepReplays();
/// The device the step runs on, for people ("CPU", "NVIDIA H200 (CUDA
/// device 0)").
std::string deviceName();
} // namespace gdn::model

#endif // GDN_RUNTIME_MODEL_MODELMEMORY_H
