"""The package's public names and version."""

import os
import re

import gdn

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_version_is_the_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        version = re.search(r"project\(gdn VERSION ([0-9.]+)", f.read())[1]
    assert gdn.__version__ == version


def test_all_names_exist_and_are_documented():
    for name in gdn.__all__:
        assert hasattr(gdn, name), name
    assert "CompiledModel" in gdn.__all__ and "Tokenizer" in gdn.__all__
    assert gdn.__doc__ and "gdn.tokenizer" in gdn.__doc__
