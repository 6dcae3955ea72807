//===- HostMemory.cpp - a CPU model's buffers in host memory --------------===//

#include "ModelMemory.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

std::string gdn::model::memoryUnavailable() { return {}; }

void *gdn::model::allocateBytes(size_t bytes) {
  return std::malloc(bytes ? bytes : 1);
}

void gdn::model::freeBytes(void *pointer) { std::free(pointer); }

std::string gdn::model::memoryError() { return std::strerror(ENOMEM); }

bool gdn::model::stepReadsMappedFiles() { return true; }

void gdn::model::finishStep() {}

std::string gdn::model::deviceName() { return "CPU"; }
