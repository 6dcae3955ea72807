//===- PreTokenizer.h - the regex split of Qwen tokenizers ------*- C++ -*-===//
//
// Byte-level BPE never merges across the pieces of a pre-tokenizer split:
// Qwen's regex cuts text into letter runs with one leading space or
// punctuation mark, single digits, punctuation runs and white space.
// Hugging Face compiles the pattern with Oniguruma; here it is PCRE2, which
// has the same Unicode properties (\p{L}, \p{N}, \p{M}), scoped caseless
// groups and lookahead, and leftmost-first alternation. The one difference
// that matters, `\s`, is rewritten before compiling (see PreTokenizer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_PRETOKENIZER_H
#define GDN_RUNTIME_TOKENIZER_PRETOKENIZER_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace gdn::tokenizer {

/// A compiled split pattern with the "Isolated" behaviour: every match is a
/// piece, and so is every stretch of text between matches.
class RegexSplitter {
public:
  /// Compiles `pattern` (the tokenizer.json string, in Oniguruma syntax as
  /// far as Qwen's patterns use it). The error says what PCRE2 refused and
  /// where.
  static llvm::Expected<RegexSplitter> compile(llvm::StringRef pattern);

  /// Calls `onPiece` with the non-empty pieces of `text` in order; `text`
  /// must be well-formed UTF-8. Fails only if PCRE2 does (out of memory).
  llvm::Error
  split(llvm::StringRef text,
        llvm::function_ref<llvm::Error(llvm::StringRef)> onPiece) const;

private:
  struct Code;
  explicit RegexSplitter(std::shared_ptr<const Code> code)
      : code(std::move(code)) {}
  /// Shared, because compiled code is immutable and thread-safe in PCRE2.
  std::shared_ptr<const Code> code;
};

/// `pattern` with `\s` replaced by Unicode White_Space spelled out, and
/// `\S` by its complement, so that PCRE2 agrees with Oniguruma on U+180E.
/// Fails on `\S` inside a character class, which has no spelling in
/// PCRE2 10.42 (no nested classes).
llvm::Expected<std::string> rewriteWhiteSpaceEscapes(llvm::StringRef pattern);

/// GPT-2's split, which a lone ByteLevel pre-tokenizer with use_regex
/// applies (Hugging Face byte_level.rs).
extern const char gpt2SplitPattern[];

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_PRETOKENIZER_H
