//===- BufferViews.h - the buffer behind a view ------------------*- C++
//-*-===//
//
// What the host-code passes of Codegen/GPU ask of a memref value: which
// buffer (an allocation or an argument) its element accesses touch.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_GPU_BUFFERVIEWS_H
#define GDN_LIB_CODEGEN_GPU_BUFFERVIEWS_H

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::gdn {

/// The buffer that `value` is a view of (through subviews, reshapes and
/// casts): an allocation, an argument, or whatever no view defines.
inline Value bufferOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_GPU_BUFFERVIEWS_H
