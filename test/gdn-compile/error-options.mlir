// RUN: rm -f %t.out
// RUN: not gdn-compile %s --emit=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --emit=mlir-linalg --chunk-size=0 -o %t.out 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHUNK
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --chunk-size=-16 -o %t.out 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --delta-rule-form=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda --emit=exe -o %t.out 2>&1 | FileCheck %s --check-prefix=CUDA
// RUN: not test -e %t.out
// RUN: not gdn-compile %s 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: not gdn-compile -o %t.out 2>&1 | FileCheck %s --check-prefix=NO-INPUT
// RUN: not gdn-compile %s --recurrent-below=-5 -o %t.out 2>&1 | FileCheck %s --check-prefix=RECURRENT
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --num-threads=-1 -o %t.out 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --emit=obj -o - 2>&1 | FileCheck %s --check-prefix=STDOUT
// RUN: not gdn-compile %s --emit=shared -o - 2>&1 | FileCheck %s --check-prefix=STDOUT
// RUN: not gdn-compile %s --emit=exe -o - 2>&1 | FileCheck %s --check-prefix=STDOUT
// RUN: not gdn-compile %s --chunk-size=1000000 -o %t.out 2>&1 | FileCheck %s --check-prefix=HUGE-CHUNK
// RUN: not test -e %t.out
// RUN: not gdn-opt %s --gdn-chunk-delta-rule=chunk-size=1000000 2>&1 | FileCheck %s --check-prefix=PASS-CHUNK
// RUN: not gdn-compile %s --cpu=nonsense -o %t.out 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda --cuda-chip= -o %t.out 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not gdn-compile %s --target=cuda --cuda-chip=sm_50 -o %t.out 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not gdn-compile %s --target=cuda --cuda-chip=sm_99 -o %t.out 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda --cuda-binary-format=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not test -e %t.out
// Every option of the pipelines is a flag, with the pipeline's bounds.
// RUN: not gdn-compile %s --matmul-tile-n=20 -o %t.out 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not gdn-compile %s --target=cuda --cuda-block-columns=0 -o %t.out 2>&1 | FileCheck %s --check-prefix=COLUMNS
// RUN: not gdn-compile %s --target=cuda --cuda-max-blocks=0 -o %t.out 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda --cuda-context-segments=3 -o %t.out 2>&1 | FileCheck %s --check-prefix=SEGMENTS
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda --cuda-projection-row-group=17 -o %t.out 2>&1 | FileCheck %s --check-prefix=ROWGROUP
// RUN: not gdn-compile %s --target=cuda --cuda-projection-tile-stages=1 -o %t.out 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not test -e %t.out
// RUN: not gdn-opt %s --gdn-lower-to-cpu=chunk-size=0 2>&1 | FileCheck %s --check-prefix=PIPELINE-CHUNK
// RUN: not gdn-opt %s --gdn-lower-to-cpu=matmul-tile-n=20 2>&1 | FileCheck %s --check-prefix=PIPELINE-TILE
// RUN: not gdn-opt %s --gdn-lower-to-cuda='binary-format=isa value-tile=12' 2>&1 | FileCheck %s --check-prefix=PIPELINE-VTILE
// TILE: gdn-compile: error: --matmul-tile-m must be positive and matmul-tile-n a multiple of 16, but got 8 and 20{{$}}
// COLUMNS: gdn-compile: error: --cuda-block-columns must be in [1, 1024], but got 0{{$}}
// SEGMENTS: gdn-compile: error: --cuda-context-segments must be 0 (chosen from the shapes) or a power of two in [1, 64], but got 3{{$}}
// ROWGROUP: gdn-compile: error: --cuda-projection-row-group: row-group must be in 1..16, but got 17{{$}}
// STAGES: gdn-compile: error: --cuda-projection-tile-stages: expected 0 (off) or 2..4 tiles, got 1{{$}}
// BLOCKS: gdn-compile: error: --cuda-shared-memory-per-multiprocessor must be positive, reserved-per-block non-negative and max-blocks at least 1{{$}}
// PIPELINE-CHUNK: gdn-lower-to-cpu: chunk-size must be 1..1024, but got 0{{$}}
// PIPELINE-TILE: gdn-lower-to-cpu: matmul-tile-m must be positive and matmul-tile-n a multiple of 16, but got 8 and 20{{$}}
// PIPELINE-VTILE: gdn-lower-to-cuda: value-tile must be a positive multiple of 8, but got 12{{$}}

// The same checks in the named pipeline.
// RUN: not gdn-opt %s --gdn-lower-to-cuda='binary-format=isa chip=' 2>&1 | FileCheck %s --check-prefix=PIPELINE-CHIP
// RUN: not gdn-opt %s --gdn-lower-to-cuda=binary-format=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=PIPELINE-FORMAT
// RUN: not test -e %t.out

// Invalid options fail before anything is written.
// HUGE-CHUNK: gdn-compile: error: --chunk-size must be 1..1024, but got 1000000{{$}}
// PASS-CHUNK: gdn-chunk-delta-rule: chunk-size must be 1..1024, but got 1000000
// CPU: gdn-compile: error: --cpu: 'nonsense' is not a CPU of x86_64{{.*}}; valid names: native, {{.*}}skylake-avx512
// CHIP: gdn-compile: error: --cuda-chip: '{{(sm_50|sm_99)?}}' is not a GPU architecture CUDA 13 compiles for; valid names: sm_75, {{.*}}sm_90a, {{.*}}sm_100a
// FORMAT: gdn-compile: error: --cuda-binary-format: 'bogus' is not one of fatbin, bin, isa
// PIPELINE-CHIP: gdn-lower-to-cuda: chip: '' is not a GPU architecture
// PIPELINE-FORMAT: gdn-lower-to-cuda: binary-format: 'bogus' is not one of fatbin, bin, isa

// EMIT: gdn-compile: for the --emit option: Cannot find option named 'bogus'!
// CHUNK: gdn-compile: error: --chunk-size must be 1..1024, but got 0{{$}}
// NEGATIVE: gdn-compile: error: --chunk-size must be 1..1024, but got -16{{$}}
// RECURRENT: gdn-compile: error: --recurrent-below must be 0 (off) or positive, but got -5{{$}}
// THREADS: gdn-compile: error: --num-threads must be 0 (the OpenMP runtime's default) or positive, but got -1{{$}}
// STDOUT: gdn-compile: error: -o - (standard output) is only for the text stages
// FORM: gdn-compile: for the --delta-rule-form option: Cannot find option named 'bogus'!
// FORM: gdn-compile: error: --delta-rule-form: 'bogus' is not a valid value
// CUDA: error: --emit=exe needs a function 'func.func @main()' without arguments or results to run
// NO-OUTPUT: gdn-compile: error: no output: give -o <path> (see --help)
// NO-INPUT: gdn-compile: error: no input file: give a .mlir file or a model .json (see --help)

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}
