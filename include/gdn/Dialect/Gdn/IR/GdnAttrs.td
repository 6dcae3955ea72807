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

#endif // GDN_DIALECT_GDN_IR_GDNATTRS_TD
