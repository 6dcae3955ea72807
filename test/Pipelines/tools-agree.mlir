// The named pipelines are the whole lowering: gdn-opt and gdn-compile give
// the same module for the same input, on both targets (the CUDA binary's
// compile-time attribute aside, which ptxas measures anew each run).
// RUN: gdn-opt %s --gdn-lower-to-cpu -o %t.opt.mlir
// RUN: gdn-compile %s --emit=mlir-llvm -o %t.compile.mlir
// RUN: diff %t.opt.mlir %t.compile.mlir
// RUN: gdn-opt %s --gdn-lower-to-cuda=binary-format=isa | sed -e 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t.cuda-opt.mlir
// RUN: gdn-compile %s --target=cuda --cuda-binary-format=isa --emit=mlir-llvm -o - | sed -e 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t.cuda-compile.mlir
// RUN: diff %t.cuda-opt.mlir %t.cuda-compile.mlir
// So do they with options away from their defaults: each pipeline option
// reaches the same pass through either tool.
// RUN: gdn-opt %s --gdn-lower-to-cpu='chunk-size=32 matmul-tile-m=4 matmul-tile-n=48 flush-denormals=false recurrent-below=0' -o %t.opt2.mlir
// RUN: gdn-compile %s --emit=mlir-llvm --chunk-size=32 --matmul-tile-m=4 --matmul-tile-n=48 --flush-denormals=false --recurrent-below=0 -o %t.compile2.mlir
// RUN: diff %t.opt2.mlir %t.compile2.mlir
// RUN: not diff -q %t.opt.mlir %t.opt2.mlir
// RUN: gdn-opt %s --gdn-lower-to-cuda='binary-format=isa block-columns=16 value-tile=32 max-blocks=1' | sed -e 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t.cuda-opt2.mlir
// RUN: gdn-compile %s --target=cuda --cuda-binary-format=isa --cuda-block-columns=16 --cuda-value-tile=32 --cuda-max-blocks=1 --emit=mlir-llvm -o - | sed -e 's/LLVMIRToISATimeInMs = [0-9]* : i64, //' > %t.cuda-compile2.mlir
// RUN: diff %t.cuda-opt2.mlir %t.cuda-compile2.mlir
// RUN: not diff -q %t.cuda-opt.mlir %t.cuda-opt2.mlir

// The C interfaces that shared libraries export come from the pipelines
// too (c-interfaces): _mlir_ciface_ wrappers for public functions and the
// packed interface of model runtimes.
// RUN: gdn-opt %s --gdn-lower-to-cpu='c-interfaces=true results-as-out-params=true' | FileCheck %s --check-prefix=CPU
// CPU-DAG: llvm.func @_mlir_ciface_prefill(
// CPU-DAG: llvm.func @_gdn_packed_prefill(
// CPU-NOT: _mlir_ciface_helper
// RUN: gdn-opt %s --gdn-lower-to-cuda='binary-format=isa c-interfaces=true' | FileCheck %s --check-prefix=CUDA
// CUDA-DAG: llvm.func @_mlir_ciface_prefill(
// CUDA-DAG: llvm.func @_gdn_packed_prefill(
// CUDA-NOT: _mlir_ciface_helper
// RUN: gdn-opt %s --gdn-lower-to-cpu | FileCheck %s --check-prefix=NONE
// NONE-NOT: _mlir_ciface_

func.func @prefill(%q: tensor<2x70x1x16xbf16>, %k: tensor<2x70x1x16xbf16>, %v: tensor<2x70x2x16xbf16>, %g: tensor<2x70x2xf32>, %beta: tensor<2x70x2xf32>) -> (tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta {scale = 0.25 : f32} : (tensor<2x70x1x16xbf16>, tensor<2x70x1x16xbf16>, tensor<2x70x2x16xbf16>, tensor<2x70x2xf32>, tensor<2x70x2xf32>) -> (tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>)
  return %o, %s : tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>
}

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
