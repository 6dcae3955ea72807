//===- ModelInput.h - model descriptions as compiler input ------*- C++ -*-===//
//
// A model description (.json) and its weights, validated together, then
// summarised or built into the module that compileModule lowers.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_MODELINPUT_H
#define GDN_COMPILER_MODELINPUT_H

#include "gdn/Frontend/ModelConfig.h"
#include "gdn/Frontend/ModelGraph.h"
#include "gdn/Frontend/WeightFiles.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <string>

namespace mlir::gdn {

/// A model description with weights that match it.
struct ModelInput {
  /// Where the description was read from, for diagnostics.
  std::string descriptionPath;
  /// The description's text, embedded in the compiled model.
  std::string descriptionText;
  ModelConfig config;
  WeightFiles weights;
  /// The matrices the compiled step reads as bf16: those stored as BF16
  /// (unless the compile asks for f32 weights).
  std::set<std::string> bf16Weights;
  /// A checkpoint's tokenizer.json beside its config.json, or empty.
  std::string tokenizerPath;
};

/// The weights file of a description that names none: model.safetensors
/// beside it.
std::string defaultWeightsPath(StringRef descriptionPath);

/// Parses the description and checks the weights at `weightsPath` (the
/// default path when empty) against it; the error names the JSON field or
/// the tensor and the expected and actual shapes.
/// Which weight matrices (isBf16Candidate) the compiled step reads as bf16.
enum class MatrixDtype {
  /// Those stored as BF16.
  AsStored,
  /// None: BF16 files are widened at load.
  F32,
  /// All: F32 files are rounded at load.
  BF16,
};

/// Parses and validates; `matrices` chooses the step's weight matrix types.
llvm::Expected<ModelInput>
loadModelInput(StringRef descriptionPath, StringRef descriptionText,
               StringRef weightsPath,
               MatrixDtype matrices = MatrixDtype::AsStored);

/// Layers, parameters and the cache per sequence at the maximum context
/// (gdn-compile --emit=summary), then what the weights hold.
void printModelSummary(const ModelInput &model, llvm::raw_ostream &os);

/// The part of the summary the description alone gives.
void printConfigSummary(const ModelConfig &config, llvm::raw_ostream &os);

/// The weights loadModelInput reads when given no path: model.safetensors
/// beside gdn's description, a checkpoint's folder.
std::string weightsPathOf(StringRef descriptionPath, const ModelConfig &config);

/// The model's graph as gdn IR (buildModelPrefill), with the description
/// and the absolute weights path embedded for the runtime.
FailureOr<OwningOpRef<ModuleOp>>
buildModelModule(MLIRContext *context, const ModelInput &model,
                 const ModelFunctions &functions = {});

} // namespace mlir::gdn

#endif // GDN_COMPILER_MODELINPUT_H
