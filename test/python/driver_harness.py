"""Running diffgpu-opt for test_driver.py, three ways; each returns
(exit status, stdout, stderr) as text:

- `run_inprocess(args, stdin)`: `diffgpu_opt.main(args)` in this process,
  with sys.stdin/stdout/stderr replaced and file descriptors 1 and 2
  captured too (anything MLIR's C++ would print lands in stdout/stderr);
  no interpreter start-up, no imports: most tests;
- `run_subprocess(args, stdin)`: `python -m diffgpu.tools.diffgpu_opt` as a
  user runs it (real exit codes, stdin a pipe);
- `run_isolated(cases)`: several `run_inprocess` runs, one after another, in
  one child process: inputs that would make MLIR abort the process if a
  guard let them through take down that child (a negative exit status for
  the case), never pytest.

DIFFGPU_DEBUG is unset for every run (no tracebacks on purpose).
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 300


@contextlib.contextmanager
def _no_debug_env():
    saved = os.environ.pop("DIFFGPU_DEBUG", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["DIFFGPU_DEBUG"] = saved


@contextlib.contextmanager
def _captured_fds():
    """File descriptors 1 and 2 into temporary files for the block; yields
    a function returning what was written to each, as text."""
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()
    saved = [os.dup(1), os.dup(2)]

    def read():
        out = []
        for f in files:
            f.seek(0)
            out.append(f.read().decode("utf-8", "replace"))
        return out
    try:
        os.dup2(files[0].fileno(), 1)
        os.dup2(files[1].fileno(), 2)
        yield read
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        for f in files:
            f.close()


def run_inprocess(args, stdin: bytes | None = None):
    """diffgpu-opt's `main(args)` here, `stdin` its standard input."""
    from diffgpu.tools import diffgpu_opt

    out, err = io.StringIO(), io.StringIO()
    fake_in = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    old = sys.stdin, sys.stdout, sys.stderr
    with _no_debug_env(), _captured_fds() as fd_text:
        sys.stdin, sys.stdout, sys.stderr = fake_in, out, err
        try:
            rc = diffgpu_opt.main(list(args))
        finally:
            sys.stdin, sys.stdout, sys.stderr = old
        fd_out, fd_err = fd_text()
    return rc, out.getvalue() + fd_out, err.getvalue() + fd_err


def _env():
    env = dict(os.environ)
    env.pop("DIFFGPU_DEBUG", None)
    return env


def run_subprocess(args, stdin: bytes | None = None):
    """`python -m diffgpu.tools.diffgpu_opt args` in a child process."""
    proc = subprocess.run([sys.executable, "-m", "diffgpu.tools.diffgpu_opt", *args],
                          input=stdin if stdin is not None else b"", capture_output=True,
                          timeout=TIMEOUT_S, env=_env())
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), \
        proc.stderr.decode("utf-8", "replace")


_CHILD = ("import sys; sys.path.insert(0, {here!r}); import driver_harness; "
          "driver_harness.child_main()")


def run_isolated(cases):
    """`cases`: [(args, stdin bytes or None)], each run by `run_inprocess` in
    one child process, in order. A result per case; a case that crashes the
    child gets its exit status and stderr, and the cases after it are run in
    a new child."""
    results = []
    while len(results) < len(cases):
        todo = cases[len(results):]
        request = json.dumps([[list(a), base64.b64encode(s or b"").decode()]
                              for a, s in todo]).encode()
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(here=HERE)],
                              input=request, capture_output=True, timeout=TIMEOUT_S,
                              env=_env())
        done = [tuple(json.loads(line)) for line in proc.stdout.decode().splitlines()
                if line.startswith("[")]
        results += done
        if len(done) < len(todo):  # the next case took the child down
            results.append((proc.returncode, "", proc.stderr.decode("utf-8", "replace")))
    return results


def child_main():
    """The child of `run_isolated`: cases as JSON on stdin, one JSON line
    [rc, out, err] per case on stdout, written as each case ends."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
    import repo_imports
    repo_imports.bootstrap()  # diffgpu from the checkout where it is not installed

    cases = json.loads(sys.stdin.buffer.read())
    report = os.fdopen(os.dup(1), "w")
    for args, data in cases:
        res = run_inprocess(args, base64.b64decode(data))
        report.write(json.dumps(list(res)) + "\n")
        report.flush()
