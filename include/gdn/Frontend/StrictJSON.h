//===- StrictJSON.h - JSON parsing for untrusted files ----------*- C++ -*-===//
//
// llvm::json::parse accepts what RFC 8259 leaves open (duplicate keys, the
// last one winning) and recurses once per nesting level, so a file of
// 10^5 '[' overflows the stack. Model descriptions and safetensors headers
// come from users, so they are scanned first: nesting is bounded, keys are
// unique within each object, and numbers have no leading zeros (`0128`).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_FRONTEND_STRICTJSON_H
#define GDN_FRONTEND_STRICTJSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace mlir::gdn {

/// The deepest nesting of arrays and objects accepted.
inline constexpr int kMaxJSONNesting = 64;

/// Parses `text` as JSON after the checks above; errors give the line.
llvm::Expected<llvm::json::Value> parseStrictJSON(llvm::StringRef text);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_STRICTJSON_H
