"""gdn.Tokenizer: the byte-level BPE tokenizer of Qwen models.

Three kinds of checks:
- the Hugging Face fixture (test/fixtures/huggingface): every encoding that
  the real tokenizers library produced, and its decode;
- a tiny tokenizer.json written here, whose ids follow by hand from its
  vocabulary (every byte's id is its value) and merges;
- malformed and unsupported files, and bad arguments: each must fail with a
  ValueError that names the file and the JSON field.
"""

import json
import os
import re

import pytest

from gdn import Tokenizer

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "test",
                        "fixtures", "huggingface")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
               r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# ----------------------------------------------------------------------------
# The fixture: encodings made by Hugging Face tokenizers 0.23.2
# ----------------------------------------------------------------------------

with open(os.path.join(FIXTURES, "tokenizer_cases.json"),
          encoding="utf-8") as f:
    CASES = json.load(f)


@pytest.fixture(scope="module")
def qwen():
    return Tokenizer(os.path.join(FIXTURES, "tokenizer.json"))


@pytest.mark.parametrize("case", CASES, ids=lambda case: repr(case["text"]))
def test_fixture_case(qwen, case):
    assert qwen.encode(case["text"]) == case["ids"]
    assert qwen.decode(case["ids"]) == case["decoded"]
    # The reference changes only text that NFC changes.
    if case["decoded"] == case["text"]:
        assert qwen.decode(qwen.encode(case["text"])) == case["text"]


def test_fixture_special_tokens(qwen):
    assert qwen.vocab_size == 503
    assert qwen.token_id("<|endoftext|>") == 500
    assert qwen.token_id("<|im_start|>") == 501
    assert qwen.token_id("<|im_end|>") == 502
    assert qwen.token_id("<|nothing|>") is None
    assert qwen.encode("<|im_end|>") == [502]


def test_folder_path(qwen):
    folder = Tokenizer(FIXTURES)
    assert folder.path == os.path.join(FIXTURES, "tokenizer.json")
    assert folder.encode("Hello world") == qwen.encode("Hello world")
    assert repr(folder) == f"Tokenizer({folder.path!r}, vocab_size=503)"


# ----------------------------------------------------------------------------
# A tokenizer small enough to work out by hand
# ----------------------------------------------------------------------------

def _byte_chars():
    """GPT-2's bytes_to_unicode: byte -> the character that spells it."""
    printable = (list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) +
                 list(range(0xAE, 0x100)))
    table = {b: chr(b) for b in printable}
    others = [b for b in range(256) if b not in table]
    table.update({b: chr(0x100 + i) for i, b in enumerate(others)})
    return table


BYTE = _byte_chars()

# Rank = position. "c d" outranks "b c"; "Ã ©" is the UTF-8 of é; "2 0" can
# never apply, since the regex cuts digits one by one.
MERGES = [["a", "a"], ["c", "d"], ["b", "c"], ["h", "e"], ["Ġ", "t"],
          ["Ġt", "he"], ["Ã", "©"], ["2", "0"]]
AA, CD, BC, HE, G_T, G_THE, E_ACUTE, TWENTY = range(256, 264)
EOT, EOT_OF, L_TOKEN, R_TOKEN, W_TOKEN = range(264, 269)


def _added(content, **flags):
    token = {"id": 0, "content": content, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False,
             "special": True}
    token.update(flags)
    return token


def tiny_json(legacy_merges=False):
    """Every byte's token has the byte's value as id; merged tokens follow
    in merge order (256...), added tokens after them (264...)."""
    vocab = {BYTE[b]: b for b in range(256)}
    for left, right in MERGES:
        vocab[left + right] = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False,
                  "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [
            # The ids in the file are not what counts: tokenizers numbers
            # added tokens after the vocabulary, in order.
            dict(_added("<|endoftext|>"), id=5000),
            _added("<|endoftext|>of"),
            _added("<L>", lstrip=True), _added("<R>", rstrip=True),
            _added("<W>", single_word=True)],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_REGEX},
             "behavior": "Isolated", "invert": False}, byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": "", "end_of_word_suffix": "",
            "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": False, "vocab": vocab,
            "merges": ([f"{a} {b}" for a, b in MERGES] if legacy_merges
                       else [list(pair) for pair in MERGES])},
    }


def write(tmp_path, content, name="tokenizer.json"):
    path = tmp_path / name
    if isinstance(content, (dict, list)):
        content = json.dumps(content, ensure_ascii=False)
    path.write_bytes(content if isinstance(content, bytes)
                     else content.encode("utf-8"))
    return str(path)


@pytest.fixture(params=[False, True], ids=["pair merges", "string merges"])
def tiny(request, tmp_path):
    return Tokenizer(write(tmp_path, tiny_json(request.param)))


def ascii_ids(text):
    return [ord(c) for c in text]


@pytest.mark.parametrize("text, ids", [
    ("", []),
    # Equal ranks: the leftmost pair first.
    ("aaa", [AA, ord("a")]),
    ("aaaa", [AA, AA]),
    ("aaaaa", [AA, AA, ord("a")]),
    # The lower rank first, wherever it is: c d before b c.
    ("bcd", [ord("b"), CD]),
    ("bcx", [BC, ord("x")]),
    # Merges of merges; the space is "Ġ".
    (" the", [G_THE]),
    ("the", [ord("t"), HE]),
    ("a the", [ord("a"), G_THE]),
    # NFC first: e + U+0301 is é, C3 A9.
    ("é", [E_ACUTE]),
    ("e\u0301", [E_ACUTE]),
    # Digits one by one, so "2 0" never merges.
    ("2024", ascii_ids("2024")),
    ("20", ascii_ids("20")),
    # "hello  world": the last space joins the word (\s+(?!\S)).
    ("a  the", [ord("a"), 0x20, G_THE]),
])
def test_tiny_encode(tiny, text, ids):
    assert tiny.encode(text) == ids
    assert tiny.decode(ids) == text.replace("e\u0301", "é")


@pytest.mark.parametrize("text, ids", [
    ("<|endoftext|>", [EOT]),
    # Leftmost-longest: the longer token wins at the same start.
    ("x<|endoftext|>ofy", [ord("x"), EOT_OF, ord("y")]),
    ("x<|endoftext|>y", [ord("x"), EOT, ord("y")]),
    ("<|endoftext|><|endoftext|>of", [EOT, EOT_OF]),
    # An incomplete token is text.
    ("<|endoftext|", ascii_ids("<|endoftext|")),
    # Added tokens cut the text: the regex and merges stop at them.
    ("a<|endoftext|>a", [ord("a"), EOT, ord("a")]),
    # lstrip takes the spaces before, rstrip those after.
    ("a  <L>b", [ord("a"), L_TOKEN, ord("b")]),
    ("a<R>  b", [ord("a"), R_TOKEN, ord("b")]),
    # single_word: only where no word character touches it.
    ("-<W>-", [ord("-"), W_TOKEN, ord("-")]),
    ("a<W>b", ascii_ids("a<W>b")),
])
def test_tiny_added_tokens(tiny, text, ids):
    assert tiny.encode(text) == ids


def test_tiny_lookups(tiny):
    assert tiny.vocab_size == 269
    assert tiny.token_id("<|endoftext|>") == EOT
    assert tiny.token_id("Ġthe") == G_THE
    assert tiny.token_id(" the") is None
    assert tiny.token_id("a") == ord("a")


def test_tiny_decode(tiny):
    assert tiny.decode([EOT, G_THE]) == "<|endoftext|> the"
    assert tiny.decode([]) == ""
    # Half of é: one U+FFFD per ill-formed sequence, whole again when both
    # halves meet.
    assert tiny.decode([0xC3]) == "\ufffd"
    assert tiny.decode([0xC3, 0xA9]) == "é"
    assert tiny.decode([ord("a"), 0xE4, 0xBD, ord("b")]) == "a\ufffdb"
    assert tiny.decode([0xFF, 0xFE]) == "\ufffd\ufffd"
    assert tiny.decode([0xED, 0xA0, 0x80]) == "\ufffd" * 3
    # decode_bytes leaves them as they are, for streaming.
    assert tiny.decode_bytes([0xE4, 0xBD]) == b"\xe4\xbd"
    assert tiny.decode_bytes([0xE4, 0xBD, 0xA0]) == "你".encode()


def test_tiny_nul_and_long_text(tiny):
    assert tiny.encode("a\0a") == [ord("a"), 0, ord("a")]
    text = "the aaa bcd 2024 é<|endoftext|>" * 2000
    ids = tiny.encode(text)
    assert ids == tiny.encode(text[:31]) * 2000
    assert tiny.decode(ids) == text


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

def test_missing_file(tmp_path):
    path = str(tmp_path / "absent.json")
    with pytest.raises(ValueError,
                       match=f"cannot read {re.escape(path)}: No such"):
        Tokenizer(path)


def test_not_json(tmp_path):
    path = write(tmp_path, '{"model": ')
    with pytest.raises(ValueError, match=f"{re.escape(path)}: not valid JSON"):
        Tokenizer(path)
    path = write(tmp_path, "[" * 100000)
    with pytest.raises(ValueError, match="nest deeper than 64 levels"):
        Tokenizer(path)


def _edited(edit):
    config = tiny_json()
    edit(config)
    return config


def _set(path, value):
    """An edit that sets config[path[0]][path[1]]... to `value`."""
    def edit(config):
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set(["model", "type"], "WordPiece"),
     'model.type: "WordPiece" is not supported (supported: "BPE")'),
    (_set(["model", "merges", 1], ["a", "zz"]),
     'model.merges[1]: ["a", "zz"] names "zz", which is not in model.vocab'),
    (_set(["model", "merges", 1], ["b", "b"]),
     'model.merges[1]: ["b", "b"] makes "bb", which is not in model.vocab'),
    (_set(["model", "merges", 2], "b c"),
     "model.merges[2]: is a string but model.merges[0] is a pair: the "
     "merges must all be strings or all pairs"),
    (_set(["model", "merges"], ["a a", "a b c"]),
     'model.merges[1]: "a b c" must be two tokens separated by one space'),
    (_set(["model", "vocab", "a"], -1),
     'model.vocab["a"]: must be an integer from 0 to 2147483647'),
    # Keys in byte order: "zz" before "ą" (C4 85), which spells byte 5.
    (_set(["model", "vocab", "zz"], 5),
     'model.vocab: "zz" and "ą" both have id 5'),
    (_set(["model", "unk_token"], "<unk>"),
     'model.unk_token: "<unk>" is not in model.vocab'),
    (_set(["model", "dropout"], 0.1), "model.dropout: values above 0 are "
     "not supported"),
    (_set(["model", "byte_fallback"], True),
     "model.byte_fallback: true is not supported"),
    (_set(["normalizer"], {"type": "NFKC"}),
     'normalizer.type: "NFKC" is not supported (supported: "NFC"'),
    (_set(["pre_tokenizer", "pretokenizers", 0, "behavior"], "Removed"),
     'pre_tokenizer.pretokenizers[0].behavior: "Removed" is not supported'),
    (_set(["pre_tokenizer", "pretokenizers", 0, "pattern", "Regex"], "(a"),
     "pre_tokenizer.pretokenizers[0].pattern.Regex: PCRE2 cannot compile "
     "it: missing closing parenthesis"),
    (_set(["pre_tokenizer"], {"type": "Whitespace"}),
     'pre_tokenizer.type: "Whitespace" is not supported'),
    (_set(["decoder"], None), "decoder: null is not supported"),
    (_set(["added_tokens", 1], {"id": 3}),
     "added_tokens[1].content: missing"),
])
def test_refused_files(tmp_path, edit, message):
    # The message names the file, then the field.
    path = write(tmp_path, _edited(edit))
    with pytest.raises(ValueError) as info:
        Tokenizer(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_encode_refuses_invalid_utf8(tiny):
    # A lone surrogate reaches the library as ED A0 80.
    with pytest.raises(ValueError, match="not valid UTF-8: byte 0xED at "
                                         "offset 2"):
        tiny.encode("ab\ud800")
    with pytest.raises(TypeError):
        tiny.encode(b"bytes")


def test_decode_refuses_unknown_ids(tiny):
    with pytest.raises(ValueError, match=r"ids\[1\] = 269 is not in the "
                                         r"vocabulary \(vocabulary size 269\)"):
        tiny.decode([1, 269])
    with pytest.raises(ValueError, match=r"ids\[0\] = -1 is not"):
        tiny.decode([-1])
    with pytest.raises(ValueError, match="does not fit in int64"):
        tiny.decode([2**64])
    with pytest.raises(TypeError):
        tiny.decode([1.5])
