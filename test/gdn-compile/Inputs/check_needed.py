"""Fails if an ELF file needs a shared library outside the allowed set:
libc, libstdc++, libm, libgcc_s, the dynamic loader, libomp, and the
driver's libcuda for CUDA code (and, for the model executable, the model's
own library). Reads `llvm-readelf --dynamic` output.

  check_needed.py READELF FILE [FILE ...]
"""

import re
import subprocess
import sys

ALLOWED = re.compile(r"^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|"
                     r"libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|libomp\.so(\.5)?|"
                     r"libcuda\.so\.1|libgdn-model\.so)$")


def main():
    readelf, files = sys.argv[1], sys.argv[2:]
    bad = 0
    for path in files:
        text = subprocess.run([readelf, "--dynamic", path], check=True,
                              capture_output=True, text=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", text)
        extra = [lib for lib in needed if not ALLOWED.match(lib)]
        print(f"{path}: {' '.join(needed)}")
        if extra:
            print(f"error: {path} needs {', '.join(extra)}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
