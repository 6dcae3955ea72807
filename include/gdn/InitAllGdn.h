//===- InitAllGdn.h - register gdn and what its pipelines use ---*- C++ -*-===//
//
// The one registration entry point shared by gdn-opt, gdn-compile and any
// future tool.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INITALLGDN_H
#define GDN_INITALLGDN_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gdn {

/// Adds the gdn dialect, every upstream dialect and the dialect extensions
/// (bufferization models, translation interfaces) to `registry`.
void registerAllGdnDialects(DialectRegistry &registry);

/// Registers the gdn passes, the gdn conversion passes, the named gdn
/// pipelines and all upstream passes with the global registries.
void registerAllGdnPasses();

} // namespace mlir::gdn

#endif // GDN_INITALLGDN_H
