//===- Compiler.h - the library behind gdn-compile --------------*- C++ -*-===//
//
// Compiles a module of func.func ops with gdn ops on tensors, stage by stage,
// to MLIR, LLVM IR, an object file, a shared library or an executable.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_COMPILER_H
#define GDN_COMPILER_COMPILER_H

#include "gdn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::gdn {

/// What to write, in lowering order; each stage implies the ones before it.
enum class EmitAction {
  /// The parsed and verified input.
  MLIR,
  /// After the gdn ops are lowered to linalg/scf/tensor on tensors.
  MLIRLinalg,
  /// The LLVM dialect.
  MLIRLLVM,
  /// LLVM IR (text), optimized.
  LLVMIR,
  /// An object file for the target CPU.
  Object,
  /// A shared library whose public functions have a C ABI.
  SharedLibrary,
  /// An executable that runs the module's @main; for a model description,
  /// a directory with the model's shared library (C API), its executable
  /// and the C header.
  Executable,
  /// For model descriptions only: validate and summarise (gdn-compile).
  ModelSummary,
  /// For model descriptions only: cache bytes and token-mixing FLOPs over
  /// context lengths (ModelReport.h); no weights needed.
  ModelReport,
};

/// The machine the code is compiled for.
enum class CompileTarget { CPU, CUDA };

/// Everything gdn-compile can be asked to do. Not copyable (the pipeline
/// options are command-line option objects); pass it by reference.
struct CompileOptions {
  CompileTarget target = CompileTarget::CPU;
  EmitAction emit = EmitAction::SharedLibrary;
  /// Output path; "-" is standard output (text stages only).
  std::string outputPath;
  /// LLVM CPU name for code generation; "native" is the host.
  std::string cpu = "native";
  /// The pipelines' tunables; the options that follow from `emit` (C
  /// interfaces, results as out-parameters, managed host buffers) are set by
  /// compileModule whatever they hold here.
  CPUPipelineOptions cpuPipeline;
  CUDAPipelineOptions cudaPipeline;
  /// The C++ compiler driver used to link shared libraries and executables.
  std::string linker = "/usr/lib/llvm-22/bin/clang++";
  /// Directory of libomp and the MLIR runner utility libraries.
  std::string llvmLibDir = "/usr/lib/llvm-22/lib";
  /// CUDA target: the toolkit (ptxas, stub libcuda) and the mgpu* runtime
  /// archive.
  std::string cudaRoot = "/usr/local/cuda";
  std::string cudaRuntimeLibrary;
  /// What CPU code calls besides libc, libstdc++, libm and libomp
  /// (runtime/CPU).
  std::string cpuRuntimeLibrary;
  /// The module is a model's (gdn-compile model.json): its libraries carry
  /// the C API of gdn_model.h, from these archives and header (the runtime
  /// in host memory for the CPU, in CUDA device memory for CUDA).
  bool model = false;
  /// Report stages of a second or more on standard error (StageTimer.h).
  bool progress = true;
  std::string modelRuntimeLibrary, modelCudaRuntimeLibrary,
      modelDescriptionLibrary, modelMainLibrary, modelHeader;
  /// compiler-rt's builtins archive (the build's lib/libgdn_builtins.a),
  /// linked after everything else.
  std::string builtinsLibrary;
  /// The tokenizer of the model executable (runtime/Tokenizer) and the
  /// PCRE2 and utf8proc archives it needs, linked into gdn-model.
  SmallVector<std::string> modelTokenizerLibraries;
  /// Added to every link: what the runtime archives above were built with
  /// (a sanitized build's -fsanitize flags; empty otherwise).
  SmallVector<std::string> runtimeLinkFlags;
};

/// The files of a compiled model's directory.
inline constexpr const char *kModelLibraryName = "libgdn-model.so";
inline constexpr const char *kModelExecutableName = "gdn-model";
inline constexpr const char *kModelHeaderName = "gdn_model.h";

/// Checks that `cpu` names a CPU of the host's LLVM target (or is
/// "native"); the error lists the valid names.
llvm::Error checkCPUName(StringRef cpu);

/// Lowers `module` to `options.emit` and writes the result to
/// `options.outputPath`. Errors are emitted as diagnostics on the module's
/// context; nothing is left at the output path on failure.
LogicalResult compileModule(ModuleOp module, const CompileOptions &options);

} // namespace mlir::gdn

#endif // GDN_COMPILER_COMPILER_H
