#!/usr/bin/env python3
"""The training text: the King James Bible (public domain) as printed by
Debian's bible-kjv package, split into a training part and a held-out part.

    python3 training/corpus.py [--out training/data]

writes OUT/train.txt and OUT/heldout.txt (bytes, no re-encoding). The text
is cut at line boundaries into 100 pieces of about equal size; every tenth
piece (pieces 9, 19, ..., 99) is held out, so that the held-out text comes
from all over the book rather than from its last chapters only. The
package's data file is compressed, so the text is read through its
`bible` program; the script installs bible-kjv with apt-get when `bible`
is missing.
"""

import argparse
import os
import shutil
import subprocess
import sys

PIECES = 100
HELD_OUT_EVERY = 10
WHOLE_BOOK = "Gen1:1-Rev22:21"


def bible_text():
    """The whole text as bytes, from the bible program."""
    if shutil.which("bible") is None:
        subprocess.run(["apt-get", "install", "-y", "bible-kjv"], check=True,
                       stdout=subprocess.DEVNULL)
    return subprocess.run(["bible", "-f", WHOLE_BOOK], check=True,
                          stdout=subprocess.PIPE).stdout


def split(text, pieces=PIECES, every=HELD_OUT_EVERY):
    """(train, held_out) bytes: `text` cut at line ends into `pieces`
    pieces, every `every`-th of them held out."""
    lines = text.splitlines(keepends=True)
    target = len(text) / pieces
    train, held_out = [], []
    piece, size = 0, 0
    for line in lines:
        (held_out if piece % every == every - 1 else train).append(line)
        size += len(line)
        if size >= target * (piece + 1) and piece < pieces - 1:
            piece += 1
    return b"".join(train), b"".join(held_out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "data"),
        help="directory for train.txt and heldout.txt (default: %(default)s)")
    args = parser.parse_args(argv)
    train, held_out = split(bible_text())
    os.makedirs(args.out, exist_ok=True)
    for name, data in (("train.txt", train), ("heldout.txt", held_out)):
        path = os.path.join(args.out, name)
        with open(path + ".partial", "wb") as f:
            f.write(data)
        os.replace(path + ".partial", path)
        print(f"wrote {path}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
