#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv and install diffgpu
# with its pinned dependencies. Idempotent: a second run only re-checks.
#
# Time on a fresh clone (about 18 s on 2 cores, 10 s of CPU: README.md) goes
# to unpacking the wheels; two things are skipped: byte-compiling every
# installed module (`--no-compile`: Python compiles what it imports, on first
# import), and ensurepip in the new venv (4 s) where the interpreter's pip can
# install into it (`--python`, pip 22.3 and later); the venv then gets that
# same pip version alongside.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP=(.venv/bin/python -m pip)
OPTS=(-q --disable-pip-version-check --no-compile)
with_pip=()
if [ ! -x .venv/bin/python ]; then
  if "$PY" -m pip --help 2>/dev/null | grep -q -- "--python <python>"; then
    "$PY" -m venv --without-pip .venv
    PIP=("$PY" -m pip --python .venv/bin/python)
    with_pip=("pip==$("$PY" -m pip --version | cut -d' ' -f2)")
  else
    "$PY" -m venv .venv
  fi
fi
stamp=.venv/.diffgpu-installed
want=$(cat requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "${PIP[@]}" install "${OPTS[@]}" ${with_pip[@]+"${with_pip[@]}"} -r requirements-dev.txt
  "${PIP[@]}" install "${OPTS[@]}" --no-deps -e .
  echo "$want" > "$stamp"
fi
