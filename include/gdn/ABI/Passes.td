//===- Passes.td - C ABI passes ------------------------------*- tablegen -*-===//

#ifndef GDN_ABI_PASSES_TD
#define GDN_ABI_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnReadOnlyArgumentsPass : Pass<"gdn-read-only-arguments",
                                    "func::FuncOp"> {
  let summary = "Keep the tensor arguments of public functions unmodified";
  let description = [{
    Marks every tensor argument of a public function with
    `bufferization.writable = false`. One-shot bufferization otherwise treats
    function arguments as writable and may compute results in the caller's
    input buffers, for example the final state in `initial_state`; callers of
    a compiled library expect value semantics, so an argument declared
    writable is made read-only too. The one exception is an argument marked
    `gdn.in_place`, a buffer that the function updates in place (a model
    step's MLA and attention caches, whose buffers the model runtime owns; a
    pool of delta-rule states): it becomes `bufferization.writable = true`,
    and a result that is the argument's buffer is dropped from the C
    interface (`gdn-results-to-out-params`) instead of becoming an
    out-parameter.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
  ];
}

def GdnExportCInterfacesPass : Pass<"gdn-export-c-interfaces", "ModuleOp"> {
  let summary = "Export every public function through MLIR's C interface";
  let description = [{
    Sets `llvm.emit_c_interface` on every public `func.func` with a body, so
    that the LLVM lowering adds `_mlir_ciface_<name>` wrappers taking memref
    descriptors by pointer (docs/c-abi.md): the symbols a shared library
    built by gdn-compile exports. Private functions and declarations are
    left alone.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GdnPackedCInterfacePass : Pass<"gdn-packed-c-interface", "ModuleOp"> {
  let summary = "Export C-interface functions with one array-of-pointers "
                "argument";
  let description = [{
    For every `llvm.func @_mlir_ciface_<name>` whose arguments are all
    pointers (the memref descriptors of docs/c-abi.md, results as
    out-parameters), adds

      llvm.func @_gdn_packed_<name>(%arguments: !llvm.ptr)

    which loads the i-th descriptor pointer from `%arguments[i]` and calls
    the C interface. A runtime written once then calls functions whose
    argument count depends on the compiled model (a weight per tensor, two
    caches per layer) without generating C code per model or depending on
    libffi. MLIR's ExecutionEngine makes a similar wrapper, but only inside
    its JIT, on LLVM IR.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GdnResultsToOutParamsPass : Pass<"gdn-results-to-out-params",
                                     "ModuleOp"> {
  let summary = "Results of public functions as caller-allocated buffers";
  let description = [{
    The C ABI of gdn-compile's shared libraries (docs/c-abi.md): every memref
    result of a public function becomes a trailing out-parameter the caller
    allocates, and the allocation inside the function, static or dynamic in
    shape, is replaced by that buffer (upstream's
    `promoteBufferResultsToOutParams` with hoisting), so kernels write their
    results straight into the caller's memory and nothing changes owner
    across the ABI.

    A caller inside the module cannot allocate a result whose shape only
    the callee knows (the state of a prefill over T tokens, say). So a
    public function that is also called inside the module first gets a
    private copy, `<name>_returning_buffers`, that keeps its results as
    results; the internal calls go to the copy, and only the public
    function takes out-parameters. Private functions keep their results.

    A result that is one of the function's own arguments (a buffer updated
    in place: an argument marked `gdn.in_place`, such as a pool of states)
    is dropped instead: the caller already holds it, and an out-parameter
    would only receive a copy.
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // GDN_ABI_PASSES_TD
