//===- CudaRuntime.cpp - the mgpu* ABI over the CUDA driver API -----------===//

#include "gdn/Runtime/CudaRuntime.h"

#include "CudaCheck.h"
#include "StepGraphRecording.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

void gdn::cuda::failedCall(const char *call, CUresult result) {
  const char *name = "unknown";
  const char *text = "";
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  std::fflush(stdout);
  std::fprintf(stderr, "gdn CUDA runtime: %s failed: %s (%s)\n", call, name,
               text ? text : "");
  std::abort();
}

namespace {

int defaultDevice = 0;

/// Makes the primary context of the default device current on this thread.
/// Sharing the primary context lets the kernels work on memory allocated by
/// other CUDA users of the process (the CUDA runtime, PyTorch).
void ensureContext() {
  static std::once_flag initialized;
  static CUcontext context;
  std::call_once(initialized, [] {
    GDN_CUDA_CHECK(cuInit(0));
    CUdevice device;
    GDN_CUDA_CHECK(cuDeviceGet(&device, defaultDevice));
    GDN_CUDA_CHECK(cuDevicePrimaryCtxRetain(&context, device));
  });
  GDN_CUDA_CHECK(cuCtxSetCurrent(context));
}

/// The caller's stream (gdnCudaUseStream) on this thread: the generated host
/// code's streams and its default stream stand for it, and nothing is
/// synchronized or destroyed, so a call is stream-ordered with the caller's
/// work and can be captured into a CUDA graph.
struct BorrowedStream {
  bool active = false;
  CUstream stream = nullptr;
};
thread_local BorrowedStream borrowed;

/// `stream` from the host code, or the caller's stream for the default one.
CUstream orBorrowed(void *stream) {
  if (!stream && borrowed.active)
    return borrowed.stream;
  return static_cast<CUstream>(stream);
}

bool isBorrowed(void *stream) {
  return borrowed.active && static_cast<CUstream>(stream) == borrowed.stream;
}

/// The managed (host_shared) allocations: they are freed with cuMemFree and
/// the rest in stream order. The driver cannot be asked instead, since a
/// stream-ordered allocation has no attributes until its stream reaches it.
std::mutex managedMutex;
std::unordered_set<CUdeviceptr> managedAllocations;

struct TimedLaunch {
  CUevent start, stop;
};
std::mutex timingMutex;
bool timingEnabled = false;
std::vector<TimedLaunch> pendingLaunches;
double kernelMicroseconds = 0;
int64_t timedLaunches = 0;

/// Adds the elapsed time of every pending launch, waiting for each to end.
void collectTimings() {
  for (TimedLaunch &launch : pendingLaunches) {
    GDN_CUDA_CHECK(cuEventSynchronize(launch.stop));
    float milliseconds = 0;
    GDN_CUDA_CHECK(
        cuEventElapsedTime(&milliseconds, launch.start, launch.stop));
    kernelMicroseconds += milliseconds * 1000.0;
    ++timedLaunches;
    cuEventDestroy(launch.start);
    cuEventDestroy(launch.stop);
  }
  pendingLaunches.clear();
}
} // namespace

bool gdn::cuda::launchesAreTimed() {
  std::lock_guard<std::mutex> lock(timingMutex);
  return timingEnabled;
}

void gdn::cuda::makeContextCurrent() { ensureContext(); }

/// What Python's gdn.cuda calls in a CUDA library: the stream and timing
/// controls. The mgpu* functions are for the generated code only and stay
/// hidden (the archive is built with hidden visibility).
#define GDN_CUDA_API __attribute__((visibility("default")))

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  ensureContext();
  CUmodule module;
  GDN_CUDA_CHECK(cuModuleLoadData(&module, data));
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  ensureContext();
  CUmodule module;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  GDN_CUDA_CHECK(cuModuleLoadDataEx(&module, data, 1, options, values));
  return module;
}

void mgpuModuleUnload(void *module) {
  // Runs from a global destructor, possibly after the driver shut down at
  // process exit; that is not an error worth aborting (and losing output).
  CUresult result = cuModuleUnload(static_cast<CUmodule>(module));
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_DEINITIALIZED)
    gdn::cuda::failedCall("cuModuleUnload(module)", result);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  ensureContext();
  // The host code asks before every launch, with the kernel's name as a
  // constant of the library: the answer is kept per (module, name).
  static std::mutex mutex;
  static std::map<std::pair<void *, const char *>, CUfunction> known;
  std::lock_guard<std::mutex> lock(mutex);
  CUfunction &function = known[{module, name}];
  if (!function)
    GDN_CUDA_CHECK(
        cuModuleGetFunction(&function, static_cast<CUmodule>(module), name));
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemoryBytes, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  // A grid of no blocks has nothing to run (a decode step's rows fill no
  // tensor-core block; an empty cache has nothing to copy), and the driver
  // rejects it: the launch is skipped.
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  ensureContext();
  auto cuFunction = static_cast<CUfunction>(function);
  CUstream cuStream = orBorrowed(stream);
  // Above the 48 KiB default, dynamic shared memory needs an opt-in, once
  // per function and size.
  if (sharedMemoryBytes > 48 * 1024) {
    static std::mutex mutex;
    static std::map<CUfunction, int32_t> optedIn;
    std::lock_guard<std::mutex> lock(mutex);
    int32_t &allowed = optedIn[cuFunction];
    if (allowed < sharedMemoryBytes) {
      GDN_CUDA_CHECK(cuFuncSetAttribute(
          cuFunction, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          sharedMemoryBytes));
      allowed = sharedMemoryBytes;
    }
  }
  if (gdn::cuda::StepGraph::Recording *recording =
          gdn::cuda::activeRecording()) {
    unsigned grid[3] = {unsigned(gridX), unsigned(gridY), unsigned(gridZ)};
    unsigned block[3] = {unsigned(blockX), unsigned(blockY), unsigned(blockZ)};
    gdn::cuda::recordLaunch(*recording, cuFunction, grid, block,
                            sharedMemoryBytes, params, paramsCount);
    return;
  }
  TimedLaunch timed{nullptr, nullptr};
  bool timing;
  {
    std::lock_guard<std::mutex> lock(timingMutex);
    timing = timingEnabled;
  }
  if (timing) {
    GDN_CUDA_CHECK(cuEventCreate(&timed.start, CU_EVENT_DEFAULT));
    GDN_CUDA_CHECK(cuEventCreate(&timed.stop, CU_EVENT_DEFAULT));
    GDN_CUDA_CHECK(cuEventRecord(timed.start, cuStream));
  }
  GDN_CUDA_CHECK(cuLaunchKernel(cuFunction, gridX, gridY, gridZ, blockX, blockY,
                                blockZ, sharedMemoryBytes, cuStream, params,
                                extra));
  if (timing) {
    GDN_CUDA_CHECK(cuEventRecord(timed.stop, cuStream));
    std::lock_guard<std::mutex> lock(timingMutex);
    pendingLaunches.push_back(timed);
  }
}

void *mgpuStreamCreate() {
  ensureContext();
  // A recorded function's work goes into its graph, not onto a stream.
  if (gdn::cuda::activeRecording())
    return nullptr;
  if (borrowed.active)
    return borrowed.stream;
  CUstream stream;
  // A blocking stream: it waits for work queued on the legacy default
  // stream, where callers (PyTorch by default) produce the inputs.
  GDN_CUDA_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  ensureContext();
  if (gdn::cuda::activeRecording() || isBorrowed(stream))
    return;
  // Pending timings keep their events: a destroyed stream's work still
  // completes.
  GDN_CUDA_CHECK(cuStreamDestroy(static_cast<CUstream>(stream)));
}

void mgpuStreamSynchronize(void *stream) {
  ensureContext();
  if (gdn::cuda::activeRecording() || isBorrowed(stream))
    return;
  GDN_CUDA_CHECK(cuStreamSynchronize(static_cast<CUstream>(stream)));
}

// Device memory comes from the device's default memory pool, in stream
// order, and what is freed stays in the pool: the chunked scan allocates
// and frees the same scratch on every call, and cuMemAlloc/cuMemFree each
// synchronize the device and cost more than a short kernel.
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared) {
  ensureContext();
  CUdeviceptr pointer = 0;
  if (bytes == 0)
    return nullptr;
  if (gdn::cuda::StepGraph::Recording *recording = gdn::cuda::activeRecording())
    return gdn::cuda::recordAllocation(*recording, bytes, isHostShared);
  if (isHostShared) {
    GDN_CUDA_CHECK(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL));
    std::lock_guard<std::mutex> lock(managedMutex);
    managedAllocations.insert(pointer);
    return reinterpret_cast<void *>(pointer);
  }
  static std::once_flag poolConfigured;
  std::call_once(poolConfigured, [] {
    CUdevice device;
    GDN_CUDA_CHECK(cuCtxGetDevice(&device));
    CUmemoryPool pool;
    GDN_CUDA_CHECK(cuDeviceGetDefaultMemPool(&pool, device));
    cuuint64_t keepEverything = ~cuuint64_t(0);
    GDN_CUDA_CHECK(cuMemPoolSetAttribute(
        pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepEverything));
  });
  GDN_CUDA_CHECK(cuMemAllocAsync(&pointer, bytes, orBorrowed(stream)));
  return reinterpret_cast<void *>(pointer);
}

void mgpuMemFree(void *pointer, void *stream) {
  ensureContext();
  if (!pointer)
    return;
  if (gdn::cuda::StepGraph::Recording *recording = gdn::cuda::activeRecording())
    return gdn::cuda::recordFree(*recording, pointer);
  auto address = reinterpret_cast<CUdeviceptr>(pointer);
  bool managed;
  {
    std::lock_guard<std::mutex> lock(managedMutex);
    managed = managedAllocations.erase(address) != 0;
  }
  if (managed)
    GDN_CUDA_CHECK(cuMemFree(address));
  else
    GDN_CUDA_CHECK(cuMemFreeAsync(address, orBorrowed(stream)));
}

// Copies and fills of nothing (an empty sequence's outputs) are skipped:
// their pointers may be null, which the driver rejects.
void mgpuMemcpy(void *destination, void *source, size_t bytes, void *stream) {
  if (bytes == 0)
    return;
  ensureContext();
  if (gdn::cuda::StepGraph::Recording *recording = gdn::cuda::activeRecording())
    return gdn::cuda::recordCopy(*recording, destination, source, bytes);
  GDN_CUDA_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(destination),
                               reinterpret_cast<CUdeviceptr>(source), bytes,
                               orBorrowed(stream)));
}

void mgpuMemset32(void *destination, unsigned int value, size_t count,
                  void *stream) {
  if (count == 0)
    return;
  ensureContext();
  if (gdn::cuda::StepGraph::Recording *recording = gdn::cuda::activeRecording())
    return gdn::cuda::recordFill32(*recording, destination, value, count);
  GDN_CUDA_CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(destination),
                                  value, count, orBorrowed(stream)));
}

// Takes effect if called before the first kernel module is loaded; the
// context is fixed afterwards.
void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

GDN_CUDA_API double gdnCudaTakeKernelMicroseconds(int64_t *launches) {
  ensureContext();
  std::lock_guard<std::mutex> lock(timingMutex);
  collectTimings();
  double total = kernelMicroseconds;
  if (launches)
    *launches = timedLaunches;
  kernelMicroseconds = 0;
  timedLaunches = 0;
  return total;
}

GDN_CUDA_API void gdnCudaUseStream(void *stream) {
  borrowed.active = true;
  borrowed.stream = static_cast<CUstream>(stream);
}

GDN_CUDA_API void gdnCudaOwnStreams() { borrowed = BorrowedStream(); }

GDN_CUDA_API void gdnCudaSetKernelTiming(int enabled) {
  std::lock_guard<std::mutex> lock(timingMutex);
  timingEnabled = enabled != 0;
}
}
