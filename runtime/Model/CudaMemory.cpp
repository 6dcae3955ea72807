//===- CudaMemory.cpp - a CUDA model's buffers in managed memory ----------===//
//
// Managed memory, on the primary context of device 0 that the generated
// host code (runtime/CUDA) uses too: the step's kernels reach it, and the
// host can fill caches with zeros and read the logits without explicit
// copies. Failures are returned, not fatal: a model that does not fit
// reports it like a CPU build that runs out of memory.
//
//===----------------------------------------------------------------------===//

#include "ModelMemory.h"

#include <cuda.h>

#include <mutex>

namespace {
thread_local std::string lastError;

std::string describe(const char *call, CUresult result) {
  const char *name = "unknown";
  const char *text = "";
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(call) + ": " + name + " (" + (text ? text : "") + ")";
}

struct Device {
  CUresult status = CUDA_SUCCESS;
  std::string error;
  CUdevice device = 0;
  CUcontext context = nullptr;
};

/// The primary context of device 0, retained once; made current on the
/// calling thread.
const Device &device() {
  static Device state;
  static std::once_flag once;
  std::call_once(once, [] {
    auto check = [](const char *call, CUresult result) {
      if (result != CUDA_SUCCESS && state.status == CUDA_SUCCESS) {
        state.status = result;
        state.error = describe(call, result);
      }
      return result == CUDA_SUCCESS;
    };
    check("cuInit", cuInit(0)) &&
        check("cuDeviceGet", cuDeviceGet(&state.device, 0)) &&
        check("cuDevicePrimaryCtxRetain",
              cuDevicePrimaryCtxRetain(&state.context, state.device));
  });
  if (state.status == CUDA_SUCCESS)
    cuCtxSetCurrent(state.context);
  return state;
}
} // namespace

std::string gdn::model::memoryUnavailable() {
  const Device &d = device();
  if (d.status == CUDA_SUCCESS)
    return {};
  return "no CUDA device to run on: " + d.error;
}

void *gdn::model::allocateBytes(size_t bytes) {
  if (!memoryUnavailable().empty()) {
    lastError = memoryUnavailable();
    return nullptr;
  }
  CUdeviceptr pointer = 0;
  CUresult result =
      cuMemAllocManaged(&pointer, bytes ? bytes : 1, CU_MEM_ATTACH_GLOBAL);
  if (result != CUDA_SUCCESS) {
    lastError = describe("cuMemAllocManaged", result);
    return nullptr;
  }
  return reinterpret_cast<void *>(pointer);
}

void gdn::model::freeBytes(void *pointer) {
  if (pointer && device().status == CUDA_SUCCESS)
    cuMemFree(reinterpret_cast<CUdeviceptr>(pointer));
}

std::string gdn::model::memoryError() { return lastError; }

bool gdn::model::stepReadsMappedFiles() { return false; }

void gdn::model::finishStep() {
  if (device().status == CUDA_SUCCESS)
    cuCtxSynchronize();
}

std::string gdn::model::deviceName() {
  const Device &d = device();
  if (d.status != CUDA_SUCCESS)
    return "no CUDA device";
  char name[256] = {0};
  if (cuDeviceGetName(name, sizeof(name) - 1, d.device) != CUDA_SUCCESS)
    return "CUDA device 0";
  return std::string(name) + " (CUDA device 0)";
}
