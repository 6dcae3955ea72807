//===- AddedTokens.h - matching added tokens in text ------------*- C++ -*-===//
//
// Added tokens (<|endoftext|>, <|im_start|>, <think>, ...) are found before
// anything else happens to the text, and each is one token whatever BPE
// would make of it. Hugging Face finds them with an Aho-Corasick automaton
// in LeftmostLongest mode: of the matches that start first, the longest
// wins, and the scan resumes after it. A trie walked from each candidate
// position gives the same matches; Qwen has a few dozen added tokens, all
// starting with '<', so most positions are rejected by their first byte.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_ADDEDTOKENS_H
#define GDN_RUNTIME_TOKENIZER_ADDEDTOKENS_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gdn::tokenizer {

/// How an added token matches (tokenizer.json added_tokens[i]).
struct AddedTokenRule {
  uint32_t id = 0;
  /// Only where no word character touches it on either side.
  bool singleWord = false;
  /// The match takes in the white space before it (but no earlier match).
  bool lstrip = false;
  /// The match takes in the white space after it.
  bool rstrip = false;
};

/// A set of added tokens and the leftmost-longest scan over text.
class AddedTokenMatcher {
public:
  /// Adds `content` (not empty); a second add of the same content replaces
  /// the rule.
  void add(llvm::StringRef content, const AddedTokenRule &rule);

  bool empty() const { return rules.empty(); }

  /// Splits `text` (well-formed UTF-8) into added tokens, passed to
  /// `onToken`, and the non-empty text between them, passed to `onText`,
  /// in order.
  llvm::Error split(llvm::StringRef text,
                    llvm::function_ref<llvm::Error(llvm::StringRef)> onText,
                    llvm::function_ref<llvm::Error(uint32_t)> onToken) const;

private:
  struct Match {
    size_t start;
    size_t end;
    size_t rule;
  };
  /// The longest token that starts at `position`, if any.
  bool longestAt(llvm::StringRef text, size_t position, Match &match) const;
  /// Whether the single_word rule lets `match` stand.
  bool isWholeWord(llvm::StringRef text, const Match &match) const;

  /// Trie node 0 is the root; an edge is (node << 8 | byte) -> child.
  llvm::DenseMap<uint64_t, uint32_t> edges;
  /// Per node, the rule of the token ending there, or -1.
  std::vector<int32_t> nodeRule = {-1};
  std::vector<AddedTokenRule> rules;
  /// The bytes some token starts with.
  std::bitset<256> firstBytes;
  /// The one byte all tokens start with, if they agree (Qwen's '<'), for
  /// memchr to find the candidates.
  std::optional<uint8_t> onlyFirstByte;
};

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_ADDEDTOKENS_H
