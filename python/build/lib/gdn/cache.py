"""gdn-compile and the one cache of the libraries it builds.

Every compiled library of the package (the delta-rule ops of gdn.compiled,
the layer of gdn.layers, the models of gdn.compiled_model) goes through
`cached_library`: a library is a file of the cache directory named by the
sha256 of what determines its code, so a second process, or a rebuilt
compiler, never picks up a library built from something else:

    key = (source, gdn-compile options, compiler identity)

where the source is the MLIR text or, for a model, its canonical JSON
description, and the compiler identity is gdn-compile's path, mtime and
size. `load` adds an in-process table of loaded libraries on top, keyed by
the caller's configuration and the compiler identity, so that a call that
hits it (every decode step) neither rebuilds nor hashes the source text.

Compiler: $GDN_COMPILE if set, else $GDN_BUILD_DIR/bin/gdn-compile if
GDN_BUILD_DIR is set, else <repo>/build/bin/gdn-compile when the package
runs from the source tree, else gdn-compile on PATH (an installed package:
pip install ./python, with `cmake --install` putting the tools on PATH).
Cache: $GDN_CACHE_DIR if set, else ~/.cache/gdn.
"""

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading

__all__ = ["find_compiler", "cache_dir", "compiler_identity", "library_path",
           "run_compiler", "compile_source", "cached_library", "load",
           "pipeline_options", "compile_flags"]

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Loaded libraries: (compiler identity, cache dir, caller's key, options)
# -> CDLL.
_LOADED = {}
_LOCK = threading.Lock()
# Compiler identity -> its pipeline options (--list-pipeline-options).
_PIPELINE_OPTIONS = {}


def find_compiler():
    """Path of gdn-compile; RuntimeError naming the path tried if absent."""
    if os.environ.get("GDN_COMPILE"):
        candidate = os.environ["GDN_COMPILE"]
        source = "$GDN_COMPILE"
        if os.sep not in candidate:
            candidate = shutil.which(candidate) or candidate
    elif os.environ.get("GDN_BUILD_DIR"):
        candidate = os.path.join(os.environ["GDN_BUILD_DIR"], "bin",
                                 "gdn-compile")
        source = "$GDN_BUILD_DIR/bin/gdn-compile"
    else:
        candidate = os.path.join(REPO, "build", "bin", "gdn-compile")
        source = "<repo>/build/bin/gdn-compile"
        if not os.path.isfile(candidate) and shutil.which("gdn-compile"):
            candidate = shutil.which("gdn-compile")
            source = "PATH"
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return os.path.abspath(candidate)
    raise RuntimeError(
        f"gdn-compile not found: tried {candidate} ({source}) and PATH. "
        f"Build it with "
        f"scripts/setup.sh (it configures and builds into {REPO}/build), or "
        f"point GDN_COMPILE at the driver or GDN_BUILD_DIR at a build "
        f"directory.")


def cache_dir():
    """The cache directory (created if needed)."""
    path = os.environ.get("GDN_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "gdn")
    os.makedirs(path, exist_ok=True)
    return path


def compiler_identity(compiler):
    """(path, mtime_ns, size) of gdn-compile: a rebuilt compiler is another
    compiler, so its libraries get other names."""
    st = os.stat(compiler)
    return (compiler, st.st_mtime_ns, st.st_size)


def library_path(source, options, compiler, directory):
    """The cache file of `source` built with gdn-compile `options` by
    `compiler`: named by the sha256 of the three."""
    digest = hashlib.sha256()
    for part in (source, "\0".join(options),
                 *map(str, compiler_identity(compiler))):
        digest.update(part.encode())
        digest.update(b"\0\0")
    return os.path.join(directory, f"gdn-{digest.hexdigest()}.so")


def run_compiler(command):
    """Runs gdn-compile; RuntimeError with the command and its output on
    failure."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"gdn-compile failed (exit status {result.returncode}):\n"
            f"  command: {' '.join(command)}\n"
            f"stderr:\n{result.stderr}"
            + (f"stdout:\n{result.stdout}" if result.stdout else ""))


def _build_into(path, build):
    """Runs `build(tmp)` for a fresh file tmp beside `path`, then renames tmp
    to path: readers see the library complete or not at all, and a failed
    build leaves nothing behind."""
    stem = os.path.basename(path)[:-len(".so")]
    fd, tmp = tempfile.mkstemp(prefix=stem + ".", suffix=".so.tmp",
                               dir=os.path.dirname(path))
    os.close(fd)
    try:
        build(tmp)
        if os.path.getsize(tmp) == 0:
            raise RuntimeError(f"gdn-compile wrote no library into {tmp}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def compile_source(compiler, source, options, out_path):
    """Compiles the MLIR text `source` with gdn-compile `options` into
    `out_path` (atomically); the source is kept next to the library as
    .mlir for inspection."""
    stem = os.path.basename(out_path)[:-len(".so")]
    fd, src_path = tempfile.mkstemp(prefix=stem + ".", suffix=".mlir",
                                    dir=os.path.dirname(out_path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        _build_into(out_path, lambda tmp: run_compiler(
            [compiler, src_path] + list(options) + ["-o", tmp]))
        os.replace(src_path, out_path[:-len(".so")] + ".mlir")
    finally:
        if os.path.exists(src_path):
            os.unlink(src_path)


def cached_library(source, options, build=None):
    """Path of the library of (`source`, `options`) in the cache, built
    first if absent: by compile_source of the MLIR text `source`, or by
    `build(compiler, out_path)` where the source is not MLIR (a model's
    description)."""
    compiler = find_compiler()
    path = library_path(source, options, compiler, cache_dir())
    if not os.path.isfile(path):
        if build is None:
            compile_source(compiler, source, options, path)
        else:
            _build_into(path, lambda tmp: build(compiler, tmp))
    return path


def load(key, make_source, options, prepare):
    """The loaded library of the configuration `key` (hashable), built from
    `make_source()` with `options` if not cached; `prepare(library)` sets
    its functions' prototypes. One CDLL per configuration and compiler in
    the process; RuntimeError if the library cannot be loaded."""
    compiler = find_compiler()
    directory = cache_dir()
    memo = (compiler_identity(compiler), directory, key, tuple(options))
    with _LOCK:
        library = _LOADED.get(memo)
        if library is not None:
            return library
        path = cached_library(make_source(), list(options))
        try:
            library = ctypes.CDLL(path)
            prepare(library)
        except (OSError, AttributeError) as e:
            raise RuntimeError(
                f"cannot load {path} (compiled by {compiler}): {e}") from e
        _LOADED[memo] = library
        return library


def pipeline_options(compiler=None):
    """The pipeline options gdn-compile offers as flags, by keyword: the
    flag's name without "--", "-" spelled "_" (chunk_size, matmul_tile_n,
    cuda_value_tile, ...). Each entry holds the flag, the pipeline ("cpu" or
    "cuda"), the pipeline's option name, its default (text) and help. The
    pipelines' option structs declare them; this reads them from the
    compiler, so the package never repeats a name or a default."""
    compiler = compiler or find_compiler()
    identity = compiler_identity(compiler)
    with _LOCK:
        known = _PIPELINE_OPTIONS.get(identity)
    if known is None:
        result = subprocess.run([compiler, "--list-pipeline-options"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{compiler} --list-pipeline-options failed:\n"
                               f"{result.stderr}")
        known = {entry["flag"][2:].replace("-", "_"): entry
                 for entry in json.loads(result.stdout)}
        with _LOCK:
            _PIPELINE_OPTIONS[identity] = known
    return known


def _flag_value(keyword, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"compile option {keyword} must be an int, a bool or a "
                    f"str, got {value!r}")


def compile_flags(options, compiler=None):
    """gdn-compile flags for a mapping of pipeline options by keyword
    (see pipeline_options), in a canonical order so that equal options give
    equal cache keys. ValueError naming the valid keywords for an unknown
    one; the values are checked by gdn-compile itself."""
    if not options:
        return []
    known = pipeline_options(compiler)
    flags = []
    for keyword in sorted(options):
        if keyword not in known:
            raise ValueError(
                f"unknown compile option {keyword!r}; gdn-compile's pipeline "
                f"options are: {', '.join(sorted(known))}")
        flags.append(f"{known[keyword]['flag']}="
                     f"{_flag_value(keyword, options[keyword])}")
    return flags
