"""Every shell command of the ```sh blocks of the README and of
docs/tutorial.md runs as shown, in a
scratch copy of the tree's layout (examples/ copied, build/bin linked, the
rest linked read-only), so that the outputs the README names (build/...)
land in the scratch folder. A command that cannot run here is listed in
NOT_RUN with the reason; a README command that is neither run nor listed
fails the test, so a new command comes with its test. The ```python blocks
are snippets (they name arrays the reader has) and are not run."""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GDN_BUILD_DIR", REPO / "build")).resolve()

# Command prefixes that are not run, and why.
NOT_RUN = {
    "scripts/main.sh": "CI runs its steps (the model commands below) here",
    "scripts/test.sh": "it is what runs this test",
    "scripts/build-gpu-artifacts.sh": "compiles every GPU configuration "
                                      "(minutes); made by hand for the GPU "
                                      "machine",
    "scripts/build_gpu_examples.sh": "runs scripts/setup.sh (a build) "
                                     "before compiling; made by hand for "
                                     "the GPU machine",
    "python3 gpu_check.py": "needs a GPU (runs on the GPU machine)",
    "python3 gpu_model_check.py": "needs a GPU (runs on the GPU machine)",
    "python3 gpu_examples_check.py": "needs a GPU (runs on the GPU machine)",
    "python3 gpu_serving_check.py": "needs a GPU (runs on the GPU machine)",
    "python3 gpu_pool_check.py": "needs a GPU (runs on the GPU machine)",
    "python3 gpu_torch_check.py": "needs a GPU (runs on the GPU machine)",
}


DOCUMENTS = ("README.md", "docs/tutorial.md")


def readme_commands(document="README.md"):
    """The document's shell commands: continuation lines joined, comments
    and blank lines dropped."""
    text = (REPO / document).read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def _skip_reason(command):
    for prefix, reason in NOT_RUN.items():
        if command.startswith(prefix) or f" {prefix}" in command:
            return reason
    return None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO / "examples", root / "examples")
    for name in ("python", "test", "scripts", "docs"):
        (root / name).symlink_to(REPO / name)
    (root / "build").mkdir()
    (root / "build" / "bin").symlink_to(BUILD / "bin")
    return root


def test_readme_has_commands():
    commands = readme_commands()
    assert len(commands) > 20
    assert any("examples/delta_rule.mlir --target=cpu --emit=shared" in c
               for c in commands)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_commands_run_as_shown(workspace, document):
    env = dict(os.environ, GDN_CACHE_DIR=str(workspace / "cache"))
    env.pop("PYTHONPATH", None)
    failures = []
    # In the document's order: later commands use what earlier ones made.
    for command in readme_commands(document):
        if _skip_reason(command):
            continue
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command],
                                cwd=workspace, env=env, capture_output=True,
                                text=True, timeout=600)
        if result.returncode != 0:
            failures.append(f"{command}\n  exit {result.returncode}: "
                            f"{result.stderr.strip()[-800:]}")
    assert not failures, "\n".join(failures)


def test_skipped_commands_are_in_the_readme():
    """Every NOT_RUN entry still names a README command."""
    commands = [c for d in DOCUMENTS for c in readme_commands(d)]
    for prefix in NOT_RUN:
        assert any(c.startswith(prefix) or f" {prefix}" in c
                   for c in commands), prefix
