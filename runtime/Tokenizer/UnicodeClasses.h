//===- UnicodeClasses.h - character classes the tokenizer needs -*- C++ -*-===//
//
// Two classes that Hugging Face tokenizers takes from Rust and Oniguruma
// and that must match here character for character: white space (`\s` of
// the pre-tokenizer regex, the lstrip/rstrip of added tokens) and word
// characters (`\w`, the single_word rule of added tokens).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_UNICODECLASSES_H
#define GDN_RUNTIME_TOKENIZER_UNICODECLASSES_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace gdn::tokenizer {

/// An inclusive range of code points.
struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

/// Unicode's White_Space property (PropList.txt), which is Rust's
/// `char::is_whitespace` and Oniguruma's `\s`. PCRE2's `\s` with PCRE2_UCP
/// adds U+180E MONGOLIAN VOWEL SEPARATOR, so the regex gets this set
/// spelled out instead (PreTokenizer.cpp).
llvm::ArrayRef<CodePointRange> whiteSpaceRanges();

/// Whether `codePoint` has the White_Space property.
bool isWhiteSpace(uint32_t codePoint);

/// Whether `codePoint` is a word character as Rust's regex `\w` defines
/// it: Alphabetic, a mark, a decimal digit, a connector punctuation or a
/// join control.
bool isWordCharacter(uint32_t codePoint);

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_UNICODECLASSES_H
