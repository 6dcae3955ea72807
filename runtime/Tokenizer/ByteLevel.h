//===- ByteLevel.h - GPT-2's table of bytes as characters -------*- C++ -*-===//
//
// Byte-level BPE vocabularies spell every byte as one printable character
// (GPT-2's bytes_to_unicode): the 188 printable Latin-1 bytes stand for
// themselves, the other 68 (controls, space, DEL, NBSP, soft hyphen) for
// U+0100..U+0143 in byte order, so that 0x20 is "Ġ" and 0x0A is "Ċ". The
// tokenizer runs BPE on raw bytes and uses this table only to translate
// the vocabulary's keys once, at load.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_BYTELEVEL_H
#define GDN_RUNTIME_TOKENIZER_BYTELEVEL_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace gdn::tokenizer {

/// The character that spells `byte` in a byte-level vocabulary.
uint32_t byteLevelCharacter(uint8_t byte);

/// `bytes` spelled in byte-level characters (UTF-8).
std::string toByteLevel(llvm::StringRef bytes);

/// The bytes a byte-level token stands for, if every character of `token`
/// is one of the table's 256; false otherwise (then the Hugging Face
/// ByteLevel decoder emits the token's own UTF-8, as for an added token
/// with a plain space).
bool fromByteLevel(llvm::StringRef token, std::string &bytes);

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_BYTELEVEL_H
