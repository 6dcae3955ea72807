//===- CudaRuntime.h - the mgpu* ABI over the CUDA driver API ---*- C++ -*-===//
//
// Debian's MLIR ships no CUDA runtime wrappers, so gdn provides the functions
// that MLIR's gpu-to-llvm host code calls. Every driver call is checked; a
// failure prints the call, the CUDA error name and its description, and
// aborts, since the generated host code has no way to report an error.
//
// Beyond that ABI, the library exposes a few functions for the tools that
// drive compiled kernels: the stream to run on, and timing of launches.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_CUDARUNTIME_H
#define GDN_RUNTIME_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>

extern "C" {
// Called by gpu-to-llvm host code.
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemoryBytes, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *pointer, void *stream);
void mgpuMemcpy(void *destination, void *source, size_t bytes, void *stream);
void mgpuMemset32(void *destination, unsigned int value, size_t count,
                  void *stream);
void mgpuSetDefaultDevice(int32_t device);

// By default every launch and allocation of the generated host code gets its
// own stream, synchronized before the exported function returns. After
// gdnCudaUseStream(s), calls from this thread run on `s` instead (the legacy
// default stream if s is null) and return without waiting: the caller
// orders its work on `s`, and may capture the calls into a CUDA graph.
// gdnCudaOwnStreams() restores the default.
void gdnCudaUseStream(void *stream);
void gdnCudaOwnStreams();

// For drivers and benchmarks: total microseconds of kernel execution
// (CUDA events around every launch) and the number of launches since the
// last call, waiting for pending launches; both counters are reset.
double gdnCudaTakeKernelMicroseconds(int64_t *launches);
// Turns the event bracketing of launches on or off (off by default).
void gdnCudaSetKernelTiming(int enabled);
}

#endif // GDN_RUNTIME_CUDARUNTIME_H
