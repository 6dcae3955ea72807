//===- StepGraphRecording.h - mgpu* calls collected for a graph -*- C++ -*-===//
//
// Between runtime/CUDA's mgpu* functions and StepGraph: while a StepGraph
// records on a thread, the mgpu* functions hand their work to it instead
// of the driver's streams.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_CUDA_STEPGRAPHRECORDING_H
#define GDN_RUNTIME_CUDA_STEPGRAPHRECORDING_H

#include "gdn/Runtime/CudaStepGraph.h"

#include <cuda.h>

namespace gdn::cuda {

/// The recording on this thread, or null: then the mgpu* functions run
/// their work on streams as usual.
StepGraph::Recording *activeRecording();

void recordLaunch(StepGraph::Recording &recording, CUfunction function,
                  const unsigned grid[3], const unsigned block[3],
                  unsigned sharedMemoryBytes, void **params,
                  size_t paramsCount);
/// The address the function may use for `bytes` (never null for bytes > 0).
void *recordAllocation(StepGraph::Recording &recording, uint64_t bytes,
                       bool isHostShared);
void recordFree(StepGraph::Recording &recording, void *pointer);
void recordCopy(StepGraph::Recording &recording, void *destination,
                const void *source, size_t bytes);
void recordFill32(StepGraph::Recording &recording, void *destination,
                  unsigned value, size_t count);

/// Whether launches are bracketed by timing events (gdnCudaSetKernelTiming),
/// which a graph would not reproduce.
bool launchesAreTimed();
/// Makes the runtime's context current on this thread.
void makeContextCurrent();

} // namespace gdn::cuda

#endif // GDN_RUNTIME_CUDA_STEPGRAPHRECORDING_H
