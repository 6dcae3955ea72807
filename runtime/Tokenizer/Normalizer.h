//===- Normalizer.h - Unicode NFC for the tokenizer -------------*- C++ -*-===//
//
// Qwen tokenizers normalise every stretch of text between added tokens to
// NFC before splitting it. utf8proc does it in one call and is a small C
// library that links statically; ICU would do as well but brings a data
// library of some 30 MB.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_NORMALIZER_H
#define GDN_RUNTIME_TOKENIZER_NORMALIZER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace gdn::tokenizer {

/// Sets `out` to the NFC form of `text`, which must be well-formed UTF-8.
/// Text without bytes above 0x7F is returned as is: ASCII is NFC, and no
/// two ASCII characters compose.
llvm::Error normalizeNfc(llvm::StringRef text, std::string &out);

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_NORMALIZER_H
