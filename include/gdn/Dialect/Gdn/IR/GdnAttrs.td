//===- GdnAttrs.td - gdn dialect attributes ----------------*- tablegen -*-===//

#ifndef GDN_DIALECT_GDN_IR_GDNATTRS_TD
#define GDN_DIALECT_GDN_IR_GDNATTRS_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Gdn_ProjectionSplit : I32EnumAttrCase<"split", 0>;
def Gdn_ProjectionGrouped : I32EnumAttrCase<"grouped", 1>;
def Gdn_ProjectionLayout : I32EnumAttr<"ProjectionLayout",
    "how the input projections of a Qwen GDN layer are laid out: one "
    "matrix per quantity (split, Qwen3.5) or rows grouped by key head "
    "(grouped, Qwen3-Next)",
    [Gdn_ProjectionSplit, Gdn_ProjectionGrouped]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_ProjectionLayoutAttr
    : EnumAttr<Gdn_Dialect, Gdn_ProjectionLayout, "projection_layout"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// The chunked scan's strategy
//===----------------------------------------------------------------------===//

def Gdn_MmaSync : I32EnumAttrCase<"mma_sync", 0>;
def Gdn_Wgmma : I32EnumAttrCase<"wgmma", 1>;
def Gdn_MmaKind : I32EnumAttr<"MmaKind",
    "the tensor-core instruction of the scan's products",
    [Gdn_MmaSync, Gdn_Wgmma]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_StagingCpAsync : I32EnumAttrCase<"cp_async", 0>;
def Gdn_StagingTma : I32EnumAttrCase<"tma", 1>;
def Gdn_Staging : I32EnumAttr<"Staging",
    "how the scan's operands reach workgroup memory",
    [Gdn_StagingCpAsync, Gdn_StagingTma]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_StateRegisters : I32EnumAttrCase<"registers", 0>;
def Gdn_StateShared : I32EnumAttrCase<"shared", 1>;
def Gdn_StateHome : I32EnumAttr<"StateHome",
    "where the state kernel keeps its f32 state tile across chunks",
    [Gdn_StateRegisters, Gdn_StateShared]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_ScanStrategyAttr : AttrDef<Gdn_Dialect, "ScanStrategy"> {
  let mnemonic = "scan_strategy";
  let summary = "how a gdn.delta_rule runs as the chunked scan on a GPU";
  let description = [{
    Every decision of the chunked tensor-core scan (convert-gdn-to-gpu),
    chosen by `gdn-choose-scan-strategy` from the shapes and the device and
    read by the lowering alone:

    | parameter | meaning |
    |---|---|
    | `chunk` | tokens per chunk (64) |
    | `value_tile` | state columns per block of the state kernel |
    | `narrow_value_tile` | a narrower tile launched instead when the grid of `value_tile` has fewer than `narrow_below_blocks` blocks (0: none); the choice is made at run time from the batch |
    | `narrow_below_blocks` | that threshold (7/8 of the multiprocessors) |
    | `warps` | compute warps per block (4 or 8) |
    | `copy_warps` | warps of the state kernel that stage the next chunk (2) |
    | `mma` | `mma_sync` (m16n8k16, bf16 operands, f32 accumulation) or `wgmma` |
    | `staging` | `cp_async` or `tma` |
    | `stages` | chunks in flight in workgroup memory (2: double buffering) |
    | `state` | where the state tile lives: `registers` when the state product's tiles divide among the warps, else `shared` |
    | `context_segments` | segments of a sequence scanned side by side and combined through their transitions (1: none; a power of two up to 64), where the batch leaves multiprocessors idle at run time |
    | `recurrence_below` | calls of fewer tokens run the f32 column recurrence instead (0, not printed: never); for f32 q, k and v, which the scan rounds to bf16, so that decode and short prompts stay exact to f32 |

    The verifier accepts what the kernels implement today: chunks of 64,
    `mma_sync`, `cp_async`, two stages, and segments for equal-length
    sequences with their own states whose keys are a whole number of the
    segments' value tiles; `wgmma`, `tma` and deeper pipelines are named
    so that a strategy can say them once the kernels do.

    ```mlir
    #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 32,
      narrow_below_blocks = 115, warps = 4, copy_warps = 2, mma = mma_sync,
      staging = cp_async, stages = 2, state = registers, context_segments = 1>
    ```
  }];
  let parameters = (ins
    "int64_t":$chunk,
    "int64_t":$value_tile,
    "int64_t":$narrow_value_tile,
    "int64_t":$narrow_below_blocks,
    "int64_t":$warps,
    "int64_t":$copy_warps,
    "::mlir::gdn::MmaKind":$mma,
    "::mlir::gdn::Staging":$staging,
    "int64_t":$stages,
    "::mlir::gdn::StateHome":$state,
    "int64_t":$context_segments,
    DefaultValuedParameter<"int64_t", "0">:$recurrence_below
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Tensor parallelism: how a layer op splits over the ranks of one host
//===----------------------------------------------------------------------===//

def Gdn_SplitReplicated : I32EnumAttrCase<"replicated", 0>;
def Gdn_SplitHeads : I32EnumAttrCase<"heads", 1>;
def Gdn_SplitMlp : I32EnumAttrCase<"mlp", 2>;
def Gdn_SplitVocabulary : I32EnumAttrCase<"vocabulary", 3>;
def Gdn_TensorSplit : I32EnumAttr<"TensorSplit",
    "what a layer op splits over the ranks",
    [Gdn_SplitReplicated, Gdn_SplitHeads, Gdn_SplitMlp,
     Gdn_SplitVocabulary]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_CollectiveNone : I32EnumAttrCase<"none", 0>;
def Gdn_CollectiveAllReduce : I32EnumAttrCase<"all_reduce", 1>;
def Gdn_CollectiveAllGather : I32EnumAttrCase<"all_gather", 2>;
def Gdn_Collective : I32EnumAttr<"Collective",
    "the exchange of a split layer op's result between the ranks",
    [Gdn_CollectiveNone, Gdn_CollectiveAllReduce, Gdn_CollectiveAllGather]> {
  let cppNamespace = "::mlir::gdn";
  let genSpecializedAttr = 0;
}

def Gdn_TensorParallelAttr : AttrDef<Gdn_Dialect, "TensorParallel"> {
  let mnemonic = "tensor_parallel";
  let summary = "how a layer op of a model splits over tensor-parallel ranks";
  let description = [{
    The plan of `gdn-plan-tensor-parallel` for one layer op, as the
    discardable attribute `gdn.tensor_parallel`: every rank holds a slice
    of the op's weights and computes a slice of its result, and the ranks
    exchange results after it.

    | parameter | meaning |
    |---|---|
    | `ranks` | the ranks (GPUs of one host) |
    | `split` | `heads`: attention and delta-rule layers by heads, value heads with their key heads (the input projections and the gates column-parallel, the output projection row-parallel); `mlp`: the gate and up projections column-parallel, the down projection row-parallel; `vocabulary`: the LM head's rows; `replicated`: every rank computes all of it |
    | `local` | per rank: the heads (value heads of a Qwen GDN layer), the intermediate columns of the MLP, or the vocabulary rows (the last rank takes what is left when the vocabulary does not divide) |
    | `local_key_heads` | per rank: key heads of a Qwen GDN layer, key/value heads of gated attention (0 where the layer has no such heads) |
    | `collective` | what follows the op: `all_reduce` of the row-parallel projection's partial sums, `all_gather` of the vocabulary slices, or `none` |

    ```mlir
    gdn.swiglu_mlp %x weights(%g, %u, %d) {gdn.tensor_parallel =
        #gdn.tensor_parallel<ranks = 4, split = mlp, local = 512,
                             local_key_heads = 0, collective = all_reduce>}
    ```
  }];
  let parameters = (ins
    "int64_t":$ranks,
    "::mlir::gdn::TensorSplit":$split,
    "int64_t":$local,
    "int64_t":$local_key_heads,
    "::mlir::gdn::Collective":$collective
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // GDN_DIALECT_GDN_IR_GDNATTRS_TD
