"""Run the Python examples of the docs: every ```python block of a Markdown
file, in order, as one module (kernels must live in a file: the blocks are
written to one, with blank lines keeping each block at its line in the doc).
`import numpy as np` and `import diffgpu as dg` are done first (PRELUDE).

    python scripts/doc_examples.py docs/guide.md docs/language.md

Markers, on the line before a block or at the top of the file:

    <!-- doctest: skip (why) -->           this block is not run
    <!-- doctest: requires torch jax -->   (file top) skip the file without them;
                                           (before a block) skip that block

Exit status 0 if every file ran (or was skipped for a missing module), 1
otherwise. test/python/api/test_docs.py runs each file through `run_file`.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: line 1 of every program (no fence can be there): the two imports every
#: page assumes, so that a page may show a kernel without repeating them
PRELUDE = "import numpy as np; import diffgpu as dg  # doc_examples prelude"
_FENCE = re.compile(r"^```(\w*)\s*$")
_SKIP = re.compile(r"<!--\s*doctest:\s*skip\s*\((.+)\)\s*-->")
_REQUIRES = re.compile(r"<!--\s*doctest:\s*requires\s+([\w\s]+?)\s*-->")


def blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(first line number, code, skip reason or None) of each python block;
    a block whose `requires` marker names a module not installed here is
    skipped ("needs torch")."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: unterminated ``` block")
        if lang == "python":
            prev = lines[i - 1] if i > 0 else ""
            skip = _SKIP.search(prev)
            reason = skip.group(1) if skip else None
            needs = _REQUIRES.search(prev)
            if reason is None and needs:
                missing = [m for m in needs.group(1).split() if importlib.util.find_spec(m) is None]
                reason = f"needs {', '.join(missing)}" if missing else None
            out.append((start + 1, "\n".join(lines[start:j]), reason))
        i = j + 1
    return out


def requirements(text: str) -> list[str]:
    m = _REQUIRES.search("\n".join(text.splitlines()[:5]))
    return m.group(1).split() if m else []


def missing_requirements(path: str) -> list[str]:
    with open(path) as f:
        text = f.read()
    return [m for m in requirements(text) if importlib.util.find_spec(m) is None]


def program(path: str) -> str:
    """The file's runnable blocks as one module, each at its own line."""
    with open(path) as f:
        text = f.read()
    src: list[str] = [PRELUDE]
    for line, code, skip in blocks(text):
        if skip is not None:
            continue
        src += [""] * (line - 1 - len(src))
        src += code.splitlines()
    return "\n".join(src) + "\n"


def run_file(path: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `path`'s examples in a fresh interpreter, in a scratch directory
    that is removed afterwards; it is also the examples' temporary directory
    (TMPDIR), so that what they make with `tempfile` goes with it."""
    name = os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    with tempfile.TemporaryDirectory(prefix="diffgpu-doc-") as work:
        script = os.path.join(work, f"doc_{name}.py")
        with open(script, "w") as f:
            f.write(program(path))
        tmp = os.path.join(work, "tmp")
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp, TEMP=tmp, TMP=tmp)
        env.setdefault("DIFFGPU_CACHE_DIR", os.path.join(work, "cache"))
        return subprocess.run([sys.executable, script], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout)


def main(argv) -> int:
    paths = argv or sorted(os.path.join(REPO, "docs", f) for f in os.listdir(
        os.path.join(REPO, "docs")) if f.endswith(".md"))
    failed = 0
    for path in paths:
        missing = missing_requirements(path)
        if missing:
            print(f"SKIP {path}: needs {', '.join(missing)}")
            continue
        n = sum(1 for _, _, s in blocks(open(path).read()) if s is None)
        if n == 0:
            continue
        res = run_file(path)
        status = "ok" if res.returncode == 0 else "FAILED"
        print(f"{status:6s} {path}: {n} blocks")
        if res.returncode:
            failed += 1
            print(res.stdout[-2000:] + res.stderr[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
