/*===- gdn_tokenizer.h - C API of the byte-level BPE tokenizer ----*- C -*-===*\
|*                                                                            *|
|* The tokenizer of Qwen2, Qwen3 and Qwen3.5 models: reads the Hugging Face   *|
|* tokenizer.json of a model and encodes text to the same ids as Hugging      *|
|* Face tokenizers (docs/tokenizer.md says what is supported). Built as       *|
|* build/lib/libgdn-tokenizer.so, which needs no library beyond the C and     *|
|* C++ runtimes, and as the static archive libgdn_tokenizer_runtime.a.        *|
|*                                                                            *|
|* Functions that can fail return -1 (gdn_tokenizer_load: NULL), with the     *|
|* message in gdn_tokenizer_last_error(). Every argument is checked before    *|
|* memory is read through it: a NULL tokenizer, a NULL buffer with a          *|
|* positive length or capacity, and a negative length or capacity are         *|
|* errors. A loaded tokenizer is never modified, so any number of threads     *|
|* may use one at once.                                                       *|
|*                                                                            *|
|* Output buffers: encode and decode return the full length of their result   *|
|* and write as much of it as `capacity` allows. A return value above         *|
|* `capacity` means the result was cut; call again with a buffer of that      *|
|* size. A NULL buffer with capacity 0 asks for the length alone.             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GDN_TOKENIZER_H
#define GDN_TOKENIZER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports this API and nothing else (it is built with hidden
 * visibility). */
#if defined(__GNUC__)
#define GDN_TOKENIZER_API __attribute__((visibility("default")))
#else
#define GDN_TOKENIZER_API
#endif

typedef struct gdn_tokenizer gdn_tokenizer;

/* Reads `path`, a tokenizer.json or a folder holding one; NULL on failure
 * (an unreadable or malformed file, or a feature this tokenizer does not
 * implement: the message names the file and the JSON field). */
GDN_TOKENIZER_API gdn_tokenizer *gdn_tokenizer_load(const char *path);

/* Frees `tokenizer` (NULL is ignored). */
GDN_TOKENIZER_API void gdn_tokenizer_free(gdn_tokenizer *tokenizer);

/* The message of the last failure on this thread ("" if none). */
GDN_TOKENIZER_API const char *gdn_tokenizer_last_error(void);

/* Encodes the `length` bytes of UTF-8 at `text` (not NUL-terminated; NUL
 * is a character like any other) into token ids. Writes up to `capacity`
 * ids to `ids` and returns how many the text has, or -1 if `text` is not
 * valid UTF-8 (the message gives the byte offset). */
GDN_TOKENIZER_API int64_t gdn_tokenizer_encode(const gdn_tokenizer *tokenizer,
                                               const char *text, int64_t length,
                                               int64_t *ids, int64_t capacity);

/* Decodes `count` ids into UTF-8 text, each ill-formed byte sequence
 * replaced by U+FFFD. Writes up to `capacity` bytes to `text` and returns
 * the length of the whole text in bytes. No NUL is written: for a C
 * string, pass a buffer one byte longer and set text[length] = '\0'. An id
 * that is not in the vocabulary is an error (-1). */
GDN_TOKENIZER_API int64_t gdn_tokenizer_decode(const gdn_tokenizer *tokenizer,
                                               const int64_t *ids,
                                               int64_t count, char *text,
                                               int64_t capacity);

/* As gdn_tokenizer_decode, but the bytes as the tokens spell them, without
 * the U+FFFD repair: for streaming, where a character may span tokens and
 * the caller prints only complete characters. */
GDN_TOKENIZER_API int64_t
gdn_tokenizer_decode_bytes(const gdn_tokenizer *tokenizer, const int64_t *ids,
                           int64_t count, char *bytes, int64_t capacity);

/* The largest token id plus one, added tokens included. */
GDN_TOKENIZER_API int64_t
gdn_tokenizer_vocab_size(const gdn_tokenizer *tokenizer);

/* The id of the token spelled `token` (NUL-terminated): an added token such
 * as "<|endoftext|>" or "<|im_end|>", or a vocabulary key in its
 * byte-level spelling ("\xC4\xA0the" for " the"). -1 if there is none,
 * and on a NULL argument, which also sets the error message. */
GDN_TOKENIZER_API int64_t gdn_tokenizer_token_id(const gdn_tokenizer *tokenizer,
                                                 const char *token);

#ifdef __cplusplus
}
#endif

#endif /* GDN_TOKENIZER_H */
