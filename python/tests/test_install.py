"""The install tree and the pip-installed package: `cmake --install` puts
gdn-compile, gdn-opt, the runtime archives and the C headers under a
prefix, where gdn-compile finds what it links; `pip install ./python`
installs the package, which then finds gdn-compile on PATH. Nothing here
uses the build directory but to install from it."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GDN_BUILD_DIR", REPO / "build")).resolve()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    prefix, site = root / "prefix", root / "site"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix",
                    str(prefix)], check=True, capture_output=True)
    # From a copy: setuptools writes build/ and egg-info beside the sources.
    source = root / "source"
    shutil.copytree(REPO / "python", source,
                    ignore=shutil.ignore_patterns("__pycache__", "tests",
                                                  "build", "*.egg-info"))
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(site),
         str(source)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    # Only the install tree: no build directory, no source tree on the path.
    env = {k: v for k, v in os.environ.items()
           if k not in ("GDN_BUILD_DIR", "GDN_COMPILE", "PYTHONPATH",
                        "GDN_TOKENIZER_LIBRARY")}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(site)
    env["GDN_CACHE_DIR"] = str(root / "cache")
    return prefix, site, env


def test_install_tree_layout(installed):
    prefix, _, _ = installed
    for path in ("bin/gdn-compile", "bin/gdn-opt",
                 "lib/libgdn_model_runtime.a", "lib/libgdn_cpu_runtime.a",
                 "lib/libgdn-tokenizer.so",
                 "include/gdn/Runtime/gdn_model.h",
                 "include/gdn/Runtime/gdn_tokenizer.h"):
        assert (prefix / path).is_file(), path


def test_installed_compiler_builds_a_model(installed, tmp_path):
    prefix, _, env = installed
    source = REPO / "test" / "fixtures" / "huggingface" / "qwen3_5_text"
    out = tmp_path / "model"
    subprocess.run([str(prefix / "bin" / "gdn-compile"), str(source),
                    "--quiet", "-o", str(out)], check=True, env=env)
    # Decoded strictly: the streamed text stays UTF-8 even where the
    # random-weight model's tokens split a character (these do).
    result = subprocess.run([str(out / "gdn-model"), "Hello", "-n", "4",
                             "--quiet"], capture_output=True, text=True,
                            errors="strict", env=env)
    assert result.returncode == 0, result.stderr
    assert "generated tokens:" in result.stdout


def test_pip_installed_package_uses_the_install_tree(installed, tmp_path):
    prefix, site, env = installed
    script = f"""
import json, gdn
assert gdn.__file__.startswith({str(site)!r}), gdn.__file__
from gdn import cache, report
assert cache.find_compiler() == {str(prefix / 'bin' / 'gdn-compile')!r}
costs = report.cost_report({str(REPO / 'examples' / 'nenya-tiny' / 'model.json')!r}, [1024])
tok = gdn.Tokenizer({str(REPO / 'test' / 'fixtures' / 'huggingface' / 'tokenizer.json')!r})
print(json.dumps([costs["contexts"][0]["cache_bytes_total"], tok.encode("Hello world")]))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    total, ids = json.loads(result.stdout)
    assert total > 0 and ids
