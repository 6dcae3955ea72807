//===- Utf8.h - UTF-8 validation and repair for the tokenizer ---*- C++ -*-===//
//
// The tokenizer reads text as UTF-8 in three places: encode refuses input
// that is not well-formed (every later step assumes it), the byte-level
// table reads tokens code point by code point, and decode repairs the bytes
// of a token sequence, which may end inside a character or pair tokens
// that were never meant to be adjacent.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_UTF8_H
#define GDN_RUNTIME_TOKENIZER_UTF8_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gdn::tokenizer {

/// Reads the character that starts `text` (which must not be empty). Returns
/// its length in bytes and sets `codePoint`; for an ill-formed sequence
/// returns the negated length of its maximal subpart (Unicode 3.9, D93b:
/// the longest prefix that could start a well-formed sequence, at least one
/// byte), which is what one U+FFFD replaces.
int decodeUtf8(llvm::StringRef text, uint32_t &codePoint);

/// The byte offset of the first ill-formed sequence of `text`, or none if
/// it is well-formed UTF-8.
std::optional<size_t> findInvalidUtf8(llvm::StringRef text);

/// Appends `bytes` to `out`, each maximal ill-formed subsequence replaced by
/// U+FFFD: the same text as Python's `bytes.decode(errors="replace")` and
/// Rust's `String::from_utf8_lossy`, which the Hugging Face decoders use.
void appendRepairedUtf8(llvm::StringRef bytes, std::string &out);

/// Appends the UTF-8 encoding of `codePoint` (at most U+10FFFF) to `out`.
void appendUtf8(uint32_t codePoint, std::string &out);

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_UTF8_H
