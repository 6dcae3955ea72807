//===- CudaRuntime.cpp - the mgpu* ABI over the CUDA driver API -----------===//

#include "gdn/Runtime/CudaRuntime.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace {
[[noreturn]] void fail(const char *call, CUresult result) {
  const char *name = "unknown";
  const char *text = "";
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  std::fflush(stdout);
  std::fprintf(stderr, "gdn CUDA runtime: %s failed: %s (%s)\n", call, name,
               text ? text : "");
  std::abort();
}

#define GDN_CUDA_CHECK(call)                                                   \
  do {                                                                         \
    CUresult result_ = (call);                                                 \
    if (result_ != CUDA_SUCCESS)                                               \
      fail(#call, result_);                                                    \
  } while (false)

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

struct TimedLaunch {
  CUstream stream;
  CUevent start, stop;
};
std::mutex timingMutex;
bool timingEnabled = false;
std::vector<TimedLaunch> pendingLaunches;
double kernelMicroseconds = 0;
int64_t timedLaunches = 0;

/// Adds the elapsed time of the finished launches on `stream`.
void collectTimings(CUstream stream) {
  std::lock_guard<std::mutex> lock(timingMutex);
  for (size_t i = 0; i < pendingLaunches.size();) {
    TimedLaunch &launch = pendingLaunches[i];
    if (launch.stream != stream) {
      ++i;
      continue;
    }
    float milliseconds = 0;
    GDN_CUDA_CHECK(cuEventElapsedTime(&milliseconds, launch.start, launch.stop));
    kernelMicroseconds += milliseconds * 1000.0;
    ++timedLaunches;
    cuEventDestroy(launch.start);
    cuEventDestroy(launch.stop);
    pendingLaunches.erase(pendingLaunches.begin() + i);
  }
}
} // namespace

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
    fail("cuModuleUnload(module)", result);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  ensureContext();
  CUfunction function;
  GDN_CUDA_CHECK(
      cuModuleGetFunction(&function, static_cast<CUmodule>(module), name));
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemoryBytes, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  ensureContext();
  auto cuFunction = static_cast<CUfunction>(function);
  auto cuStream = static_cast<CUstream>(stream);
  // Above the 48 KiB default, dynamic shared memory needs an opt-in.
  if (sharedMemoryBytes > 48 * 1024)
    GDN_CUDA_CHECK(cuFuncSetAttribute(
        cuFunction, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        sharedMemoryBytes));
  TimedLaunch timed{cuStream, nullptr, nullptr};
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
  GDN_CUDA_CHECK(cuLaunchKernel(cuFunction, gridX, gridY, gridZ, blockX,
                                blockY, blockZ, sharedMemoryBytes, cuStream,
                                params, extra));
  if (timing) {
    GDN_CUDA_CHECK(cuEventRecord(timed.stop, cuStream));
    std::lock_guard<std::mutex> lock(timingMutex);
    pendingLaunches.push_back(timed);
  }
}

void *mgpuStreamCreate() {
  ensureContext();
  CUstream stream;
  // A blocking stream: it waits for work queued on the legacy default
  // stream, where callers (PyTorch by default) produce the inputs.
  GDN_CUDA_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  ensureContext();
  // Timings still pending on the stream are collected (which waits for
  // them) rather than leaked with their events.
  collectTimings(static_cast<CUstream>(stream));
  GDN_CUDA_CHECK(cuStreamDestroy(static_cast<CUstream>(stream)));
}

void mgpuStreamSynchronize(void *stream) {
  ensureContext();
  GDN_CUDA_CHECK(cuStreamSynchronize(static_cast<CUstream>(stream)));
  collectTimings(static_cast<CUstream>(stream));
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
  if (isHostShared) {
    GDN_CUDA_CHECK(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL));
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
  GDN_CUDA_CHECK(
      cuMemAllocAsync(&pointer, bytes, static_cast<CUstream>(stream)));
  return reinterpret_cast<void *>(pointer);
}

void mgpuMemFree(void *pointer, void *stream) {
  ensureContext();
  if (!pointer)
    return;
  auto address = reinterpret_cast<CUdeviceptr>(pointer);
  unsigned int managed = 0;
  GDN_CUDA_CHECK(
      cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address));
  if (managed)
    GDN_CUDA_CHECK(cuMemFree(address));
  else
    GDN_CUDA_CHECK(cuMemFreeAsync(address, static_cast<CUstream>(stream)));
}

void mgpuMemcpy(void *destination, void *source, size_t bytes, void *stream) {
  ensureContext();
  GDN_CUDA_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(destination),
                               reinterpret_cast<CUdeviceptr>(source), bytes,
                               static_cast<CUstream>(stream)));
}

void mgpuMemset32(void *destination, unsigned int value, size_t count,
                  void *stream) {
  ensureContext();
  GDN_CUDA_CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(destination),
                                  value, count,
                                  static_cast<CUstream>(stream)));
}

// Takes effect if called before the first kernel module is loaded; the
// context is fixed afterwards.
void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

double gdnCudaTakeKernelMicroseconds(int64_t *launches) {
  std::lock_guard<std::mutex> lock(timingMutex);
  double total = kernelMicroseconds;
  if (launches)
    *launches = timedLaunches;
  kernelMicroseconds = 0;
  timedLaunches = 0;
  return total;
}

void gdnCudaSetKernelTiming(int enabled) {
  std::lock_guard<std::mutex> lock(timingMutex);
  timingEnabled = enabled != 0;
}
}
