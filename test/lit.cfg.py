# -*- Python -*-
# lit configuration of the gdn regression and execution tests.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GDN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gdn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
config.environment["PYTHONPATH"] = os.path.join(config.gdn_src_root, "python")

llvm_config.use_default_substitutions()

lib = config.llvm_lib_dir
config.substitutions.append(("%mlir_runner_utils", os.path.join(lib, "libmlir_runner_utils.so")))
config.substitutions.append(("%mlir_c_runner_utils", os.path.join(lib, "libmlir_c_runner_utils.so")))
config.substitutions.append(("%libomp", os.path.join(lib, "libomp.so")))
# In a sanitized build (GDN_SANITIZE) the compiled libraries need the shared
# sanitizer runtime: a C program that links them takes it too, and Python
# preloads it (Python itself is not instrumented, and its allocations are not
# checked for leaks).
if config.sanitizer_runtime:
    config.available_features.add("sanitized")
    config.substitutions.append(
        ("%sanitizer_runtime_link", "-shared-libasan -Wl,-rpath,%s"
         % os.path.dirname(config.sanitizer_runtime)))
    config.substitutions.append(
        ("%python", "env LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0 %s"
         % (config.sanitizer_runtime, config.python_executable)))
else:
    config.substitutions.append(("%sanitizer_runtime_link", ""))
    config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%gdn_src_root", config.gdn_src_root))
config.substitutions.append(("%fixtures", os.path.join(config.gdn_src_root, "test", "fixtures")))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.gdn_tools_dir, append_path=True)

tool_dirs = [config.gdn_tools_dir, config.llvm_tools_dir]
tools = ["gdn-opt", "gdn-compile", "clang", "mlir-opt", "mlir-runner", "mlir-translate", "llvm-nm", "llvm-readelf"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# CUDA toolkit (ptxas, stub libcuda) and the project's CUDA runtime archive:
# needed to build CUDA shared libraries, not to run them (no GPU here).
if os.path.exists(os.path.join(config.cuda_root, "bin", "ptxas")) and \
        os.path.exists(os.path.join(config.gdn_obj_root, "lib",
                                    "libgdn_cuda_runtime.a")):
    config.available_features.add("cuda-toolkit")

# A GPU to run CUDA executables on: tests that run them carry
# `%if cuda-gpu` and are only built where there is none (CI).
def _has_cuda_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if "cuda-toolkit" in config.available_features and _has_cuda_gpu():
    config.available_features.add("cuda-gpu")

