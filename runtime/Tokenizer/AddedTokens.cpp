//===- AddedTokens.cpp - matching added tokens in text --------------------===//
//
// The rules follow Hugging Face's added_vocabulary.rs: a single_word token
// that touches a word character is passed over (the scan still resumes
// after it), lstrip widens a match leftwards over white space but never
// into the previous match, and rstrip widens it rightwards.
//
//===----------------------------------------------------------------------===//

#include "AddedTokens.h"

#include "UnicodeClasses.h"
#include "Utf8.h"

#include <algorithm>
#include <cstring>

namespace gdn::tokenizer {

void AddedTokenMatcher::add(llvm::StringRef content,
                            const AddedTokenRule &rule) {
  uint32_t node = 0;
  for (char c : content) {
    uint64_t key = uint64_t(node) << 8 | static_cast<uint8_t>(c);
    auto [edge, inserted] =
        edges.try_emplace(key, static_cast<uint32_t>(nodeRule.size()));
    if (inserted)
      nodeRule.push_back(-1);
    node = edge->second;
  }
  firstBytes.set(static_cast<uint8_t>(content.front()));
  onlyFirstByte.reset();
  if (firstBytes.count() == 1)
    onlyFirstByte = static_cast<uint8_t>(content.front());
  if (nodeRule[node] >= 0) {
    rules[nodeRule[node]] = rule;
    return;
  }
  nodeRule[node] = static_cast<int32_t>(rules.size());
  rules.push_back(rule);
}

bool AddedTokenMatcher::longestAt(llvm::StringRef text, size_t position,
                                  Match &match) const {
  bool found = false;
  uint32_t node = 0;
  for (size_t i = position; i < text.size(); ++i) {
    auto edge = edges.find(uint64_t(node) << 8 | static_cast<uint8_t>(text[i]));
    if (edge == edges.end())
      break;
    node = edge->second;
    if (nodeRule[node] >= 0) {
      match = {position, i + 1, static_cast<size_t>(nodeRule[node])};
      found = true;
    }
  }
  return found;
}

/// The start of the character that ends at `end` (> 0) in well-formed text.
static size_t previousCharacter(llvm::StringRef text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
    --start;
  return start;
}

static uint32_t characterAt(llvm::StringRef text, size_t position,
                            int &length) {
  uint32_t codePoint = 0;
  length = decodeUtf8(text.drop_front(position), codePoint);
  return codePoint;
}

bool AddedTokenMatcher::isWholeWord(llvm::StringRef text,
                                    const Match &match) const {
  int length;
  if (match.start > 0 &&
      isWordCharacter(
          characterAt(text, previousCharacter(text, match.start), length)))
    return false;
  return match.end == text.size() ||
         !isWordCharacter(characterAt(text, match.end, length));
}

/// Where the white space that ends at `end` begins.
static size_t whiteSpaceBefore(llvm::StringRef text, size_t end) {
  while (end > 0) {
    size_t start = previousCharacter(text, end);
    int length;
    if (!isWhiteSpace(characterAt(text, start, length)))
      break;
    end = start;
  }
  return end;
}

/// Where the white space that starts at `start` ends.
static size_t whiteSpaceAfter(llvm::StringRef text, size_t start) {
  while (start < text.size()) {
    int length;
    if (!isWhiteSpace(characterAt(text, start, length)))
      break;
    start += length;
  }
  return start;
}

llvm::Error AddedTokenMatcher::split(
    llvm::StringRef text,
    llvm::function_ref<llvm::Error(llvm::StringRef)> onText,
    llvm::function_ref<llvm::Error(uint32_t)> onToken) const {
  if (rules.empty())
    return text.empty() ? llvm::Error::success() : onText(text);
  size_t textStart = 0; // the text not yet passed on begins here
  size_t scan = 0;
  Match match;
  while (scan < text.size()) {
    if (onlyFirstByte) {
      const void *next =
          std::memchr(text.data() + scan, *onlyFirstByte, text.size() - scan);
      if (!next)
        break;
      scan = static_cast<const char *>(next) - text.data();
    }
    if (!firstBytes[static_cast<uint8_t>(text[scan])] ||
        !longestAt(text, scan, match)) {
      ++scan;
      continue;
    }
    const AddedTokenRule &rule = rules[match.rule];
    scan = match.end;
    if (rule.singleWord && !isWholeWord(text, match))
      continue;
    size_t start = match.start, end = match.end;
    if (rule.lstrip)
      start = std::max(whiteSpaceBefore(text, start), textStart);
    if (rule.rstrip)
      end = scan = whiteSpaceAfter(text, end);
    if (start > textStart)
      if (llvm::Error error = onText(text.slice(textStart, start)))
        return error;
    if (llvm::Error error = onToken(rule.id))
      return error;
    textStart = end;
  }
  if (textStart < text.size())
    return onText(text.drop_front(textStart));
  return llvm::Error::success();
}

} // namespace gdn::tokenizer
