//===- Passes.td - GPU code generation passes ----------------*- tablegen -*-===//

#ifndef GDN_CODEGEN_GPU_PASSES_TD
#define GDN_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnSharedMemoryOccupancyPass
    : Pass<"gdn-shared-memory-occupancy", "ModuleOp"> {
  let summary = "Keep registers from lowering the occupancy that a kernel's "
                "workgroup memory allows";
  let description = [{
    For every `gpu.launch_func` with a constant dynamic workgroup memory
    size, computes how many blocks of that size share one multiprocessor
    (`shared-memory-per-multiprocessor` over the size plus
    `reserved-per-block`, at most `max-blocks`) and sets `nvvm.minctasm` on
    the launched `gpu.func` (`.minnctapersm` in PTX), so that ptxas limits
    registers per thread to what that many blocks leave. Without the hint
    ptxas may take, for example, 146 registers for a 256-thread block whose
    108 KiB of workgroup memory would otherwise allow two blocks per
    multiprocessor; the registers then allow only one. Kernels without
    dynamic workgroup memory are left alone. A kernel launched with several
    sizes gets the smallest count.
  }];
  let options = [
    Option<"sharedMemoryPerMultiprocessor", "shared-memory-per-multiprocessor",
           "int64_t", /*default=*/"233472",
           "Workgroup memory of one multiprocessor in bytes (228 KiB: "
           "Hopper)">,
    Option<"reservedPerBlock", "reserved-per-block", "int64_t",
           /*default=*/"1024",
           "Workgroup memory the driver reserves per block in bytes">,
    Option<"maxBlocks", "max-blocks", "int64_t", /*default=*/"3",
           "Largest block count to ask for (more would squeeze registers "
           "below what the kernels need)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
  ];
}

def GdnManagedHostBuffersPass : Pass<"gdn-managed-host-buffers",
                                     "func::FuncOp"> {
  let summary = "Give host buffers managed memory that kernels can reach";
  let description = [{
    For CUDA executables, whose `@main` makes tensors on the host, passes
    them to kernels and prints the results there. After bufferization, on
    host functions:

    - `memref.alloc` becomes `gpu.alloc host_shared` (managed memory, from
      `cuMemAllocManaged`), and `memref.dealloc` of such a buffer becomes
      `gpu.dealloc`;
    - `memref.get_global` (a constant) is copied into a managed buffer at
      the start of its function, which replaces it in every use and is
      freed before each return.

    Shared libraries do not need it: their callers pass device buffers.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // GDN_CODEGEN_GPU_PASSES_TD
