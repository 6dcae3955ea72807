"""training/corpus.py's split of the text into training and held-out
parts."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "training"))

import corpus  # noqa: E402


def test_split_holds_out_every_tenth_piece_at_line_ends():
    rng = np.random.default_rng(0)
    lines = [b"v%d " % i + b"x" * int(rng.integers(0, 90)) + b"\n"
             for i in range(5000)]
    text = b"".join(lines)
    train, held = corpus.split(text)
    assert len(train) + len(held) == len(text)
    assert 0.08 < len(held) / len(text) < 0.12
    train_lines = train.splitlines(keepends=True)
    held_lines = held.splitlines(keepends=True)
    assert set(train_lines).isdisjoint(held_lines)
    assert sorted(train_lines + held_lines) == sorted(lines)
    # Ten separate held-out runs of consecutive lines, spread over the text.
    held_set = set(held_lines)
    starts = [i for i, line in enumerate(lines)
              if line in held_set and (i == 0 or lines[i - 1] not in held_set)]
    assert len(starts) == 10
    assert starts[0] > 0.05 * len(lines) and starts[-1] > 0.85 * len(lines)
