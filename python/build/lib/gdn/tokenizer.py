"""The byte-level BPE tokenizer of Qwen models (gdn.Tokenizer).

Reads a Hugging Face tokenizer.json (Qwen2, Qwen3, Qwen3.5) and encodes text
to the ids that Hugging Face tokenizers gives for it. The work is done by
libgdn-tokenizer.so (runtime/Tokenizer, docs/tokenizer.md), called through
ctypes; no Hugging Face package is needed.

    tok = gdn.Tokenizer("path/to/model")      # or .../tokenizer.json
    ids = tok.encode("Hello world")
    text = tok.decode(ids)
    eos = tok.token_id("<|endoftext|>")

Library: $GDN_TOKENIZER_LIBRARY if set, else
$GDN_BUILD_DIR/lib/libgdn-tokenizer.so if GDN_BUILD_DIR is set, else
<repo>/build/lib/libgdn-tokenizer.so, else the lib/ beside the bin/ of
gdn-compile on PATH (an install tree: the places gdn.cache looks for
gdn-compile).
"""

import array
import ctypes
import os
import shutil
import threading

__all__ = ["Tokenizer", "library_path"]

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIBRARY_NAME = "libgdn-tokenizer.so"

_LIBRARY = None
_LOCK = threading.Lock()


def library_path():
    """Path of libgdn-tokenizer.so; RuntimeError naming the path tried if
    absent."""
    if os.environ.get("GDN_TOKENIZER_LIBRARY"):
        candidate = os.environ["GDN_TOKENIZER_LIBRARY"]
        source = "$GDN_TOKENIZER_LIBRARY"
    elif os.environ.get("GDN_BUILD_DIR"):
        candidate = os.path.join(os.environ["GDN_BUILD_DIR"], "lib",
                                 LIBRARY_NAME)
        source = f"$GDN_BUILD_DIR/lib/{LIBRARY_NAME}"
    else:
        candidate = os.path.join(REPO, "build", "lib", LIBRARY_NAME)
        source = f"<repo>/build/lib/{LIBRARY_NAME}"
        installed = shutil.which("gdn-compile")
        if not os.path.isfile(candidate) and installed:
            prefix = os.path.dirname(os.path.dirname(
                os.path.realpath(installed)))
            candidate = os.path.join(prefix, "lib", LIBRARY_NAME)
            source = "the install tree of gdn-compile on PATH"
    if os.path.isfile(candidate):
        return os.path.abspath(candidate)
    raise RuntimeError(
        f"{LIBRARY_NAME} not found: tried {candidate} ({source}). Build it "
        f"with `ninja gdn_tokenizer` in the build directory, or point "
        f"GDN_TOKENIZER_LIBRARY at the library or GDN_BUILD_DIR at a build "
        f"directory.")


def _library():
    """The loaded library with its prototypes (loaded once)."""
    global _LIBRARY
    with _LOCK:
        if _LIBRARY is None:
            lib = ctypes.CDLL(library_path())
            i64, p_i64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
            handle, text = ctypes.c_void_p, ctypes.c_char_p
            prototypes = {
                "gdn_tokenizer_load": (handle, [text]),
                "gdn_tokenizer_free": (None, [handle]),
                "gdn_tokenizer_last_error": (text, []),
                "gdn_tokenizer_encode": (i64, [handle, text, i64, p_i64,
                                               i64]),
                "gdn_tokenizer_decode": (i64, [handle, p_i64, i64, text,
                                               i64]),
                "gdn_tokenizer_decode_bytes": (i64, [handle, p_i64, i64,
                                                     text, i64]),
                "gdn_tokenizer_vocab_size": (i64, [handle]),
                "gdn_tokenizer_token_id": (i64, [handle, text]),
            }
            for name, (restype, argtypes) in prototypes.items():
                function = getattr(lib, name)
                function.restype = restype
                function.argtypes = argtypes
            _LIBRARY = lib
        return _LIBRARY


def _pointer(ids):
    """An int64 pointer to the items of the array.array `ids` (which may be
    empty)."""
    if not ids:
        return None
    address, _ = ids.buffer_info()
    return ctypes.cast(address, ctypes.POINTER(ctypes.c_int64))


def _last_error(lib):
    return lib.gdn_tokenizer_last_error().decode("utf-8", "replace")


def _id_array(ids):
    """`ids` (any iterable of integers, numpy's included) as an int64
    array.array; TypeError for non-integers."""
    try:
        return array.array("q", ids)
    except OverflowError:
        raise ValueError("a token id does not fit in int64") from None


class Tokenizer:
    """A tokenizer.json loaded into libgdn-tokenizer.so.

    `path` is a tokenizer.json or a folder holding one (a Hugging Face
    model folder). A malformed file, or one with a feature the tokenizer
    does not implement, raises ValueError with a message naming the file
    and the JSON field. One Tokenizer may be used from several threads.
    """

    def __init__(self, path):
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        self._lib = _library()
        self._handle = self._lib.gdn_tokenizer_load(os.fsencode(path))
        if not self._handle:
            raise ValueError(_last_error(self._lib))
        self.path = path

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.gdn_tokenizer_free(handle)
            self._handle = None

    def __repr__(self):
        return f"Tokenizer({self.path!r}, vocab_size={self.vocab_size})"

    @property
    def vocab_size(self):
        """The largest token id plus one, added tokens included."""
        return self._lib.gdn_tokenizer_vocab_size(self._handle)

    def token_id(self, token):
        """The id of `token` (an added token such as "<|endoftext|>", or a
        vocabulary key in byte-level spelling), or None."""
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, not {type(token).__name__}")
        if "\0" in token:
            return None
        found = self._lib.gdn_tokenizer_token_id(self._handle,
                                                  token.encode("utf-8"))
        return None if found < 0 else found

    def encode(self, text):
        """The token ids of `text` (a str) as a list of ints, as Hugging
        Face's `encode(text)` gives them (Qwen adds no special tokens)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        # Lone surrogates go through, for the library to refuse with the
        # byte offset.
        data = text.encode("utf-8", "surrogatepass")
        capacity = len(data) + 16  # usually at least one byte per token
        while True:
            ids = array.array("q", bytes(8 * capacity))
            count = self._lib.gdn_tokenizer_encode(
                self._handle, data, len(data), _pointer(ids), capacity)
            if count < 0:
                raise ValueError(_last_error(self._lib))
            if count <= capacity:
                return ids[:count].tolist()
            capacity = count

    def _decode(self, function, ids):
        ids = _id_array(ids)
        capacity = 8 * len(ids) + 64
        while True:
            out = ctypes.create_string_buffer(capacity)
            length = function(self._handle, _pointer(ids), len(ids), out,
                              capacity)
            if length < 0:
                raise ValueError(_last_error(self._lib))
            if length <= capacity:
                return out.raw[:length]
            capacity = length

    def decode(self, ids):
        """The text of `ids`; byte sequences that are not UTF-8 (a character
        cut between tokens) become U+FFFD. An id outside the vocabulary
        raises ValueError. Special tokens are kept, as transformers'
        `decode(ids)` keeps them."""
        return self._decode(self._lib.gdn_tokenizer_decode,
                            ids).decode("utf-8")

    def decode_bytes(self, ids):
        """The bytes of `ids` as they are, for streaming: keep the bytes of
        an incomplete character until the tokens that complete it arrive."""
        return self._decode(self._lib.gdn_tokenizer_decode_bytes, ids)
