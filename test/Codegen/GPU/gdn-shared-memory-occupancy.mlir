// RUN: gdn-opt %s --gdn-shared-memory-occupancy | FileCheck %s
// RUN: gdn-opt %s --gdn-shared-memory-occupancy=max-blocks=4 | FileCheck %s --check-prefix=FOUR
// RUN: not gdn-opt %s --gdn-shared-memory-occupancy=max-blocks=0 2>&1 | FileCheck %s --check-prefix=BAD

// 108032 bytes of workgroup memory: two blocks per multiprocessor (228 KiB,
// 1 KiB reserved per block); 159744 bytes: one; 40000 bytes: five, capped
// at max-blocks (3, or 4). A kernel launched with two sizes gets the
// smaller count; one without dynamic workgroup memory is left alone.
// CHECK-LABEL: gpu.module @two
// CHECK: gpu.func @f({{.*}}) kernel attributes {{{.*}}nvvm.minctasm = 2 : i32}
// CHECK-LABEL: gpu.module @one
// CHECK: nvvm.minctasm = 1 : i32
// CHECK-LABEL: gpu.module @small
// CHECK: nvvm.minctasm = 3 : i32
// FOUR-LABEL: gpu.module @small
// FOUR: nvvm.minctasm = 4 : i32
// CHECK-LABEL: gpu.module @mixed
// CHECK: nvvm.minctasm = 1 : i32
// CHECK-LABEL: gpu.module @none
// CHECK-NOT: nvvm.minctasm
// BAD: gdn-shared-memory-occupancy: shared-memory-per-multiprocessor must be positive, reserved-per-block non-negative and max-blocks at least 1
module attributes {gpu.container_module} {
  gpu.module @two {
    gpu.func @f() kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
  }
  gpu.module @one {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  gpu.module @small {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  gpu.module @mixed {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  gpu.module @none {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  func.func @host() {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %wy = arith.constant 108032 : i32
    %wide = arith.constant 159744 : i32
    %little = arith.constant 40000 : i32
    gpu.launch_func @two::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %wy
    gpu.launch_func @one::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %wide
    gpu.launch_func @small::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %little
    gpu.launch_func @mixed::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %little
    gpu.launch_func @mixed::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %wide
    gpu.launch_func @none::@f blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
    return
  }
}
