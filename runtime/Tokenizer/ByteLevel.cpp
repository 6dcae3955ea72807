//===- ByteLevel.cpp - GPT-2's table of bytes as characters ---------------===//

#include "ByteLevel.h"

#include "Utf8.h"

namespace gdn::tokenizer {

/// Bytes that are printable as themselves.
static bool isPrintableByte(unsigned byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

uint32_t byteLevelCharacter(uint8_t byte) {
  if (isPrintableByte(byte))
    return byte;
  // The k-th non-printable byte, in increasing order, is U+0100 + k.
  uint32_t rank = 0;
  for (unsigned b = 0; b < byte; ++b)
    rank += !isPrintableByte(b);
  return 0x100 + rank;
}

std::string toByteLevel(llvm::StringRef bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes)
    appendUtf8(byteLevelCharacter(static_cast<uint8_t>(c)), out);
  return out;
}

/// The byte that `codePoint` spells, or -1 if it is not in the table.
static int byteOfCharacter(uint32_t codePoint) {
  if (codePoint < 0x100)
    return isPrintableByte(codePoint) ? static_cast<int>(codePoint) : -1;
  if (codePoint > 0x143)
    return -1;
  uint32_t rank = codePoint - 0x100;
  for (unsigned b = 0; b < 256; ++b)
    if (!isPrintableByte(b) && rank-- == 0)
      return static_cast<int>(b);
  return -1;
}

bool fromByteLevel(llvm::StringRef token, std::string &bytes) {
  std::string out;
  out.reserve(token.size());
  while (!token.empty()) {
    uint32_t codePoint;
    int length = decodeUtf8(token, codePoint);
    if (length < 0)
      return false;
    int byte = byteOfCharacter(codePoint);
    if (byte < 0)
      return false;
    out.push_back(static_cast<char>(byte));
    token = token.drop_front(length);
  }
  bytes = std::move(out);
  return true;
}

} // namespace gdn::tokenizer
