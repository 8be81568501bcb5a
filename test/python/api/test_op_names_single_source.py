"""diffgpu op names are spelled in dialects/ only.

Passes test `isinstance(op, AutodiffOp)` (dialects/ops.py) or compare with a
name from dialects/names.py; the frontend takes names and layouts from
dialects/names.py. This test reads every Python file of the compiler outside
dialects/ and fails on a string literal holding a diffgpu op name (docstrings,
which carry IR examples, excepted). Attribute names such as `diffgpu.target`
are not op names.
"""
import ast
import os
import re

from diffgpu.dialects import names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCANNED = ("lowering", "python", "tools", "bench", "scripts", "examples")
OP_NAME = re.compile(r"diffgpu\.(%s)\b" % "|".join(names.short(n) for n in names.ALL))


def _docstrings(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def offending_literals(path):
    """(line, text) of each string literal of `path` that spells an op name."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    docs = _docstrings(tree)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if OP_NAME.search(node.value):
                bad.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # f'"diffgpu.{name}"(...)' in IR text
            parts = node.values
            for a, b in zip(parts, parts[1:]):
                if (isinstance(a, ast.Constant) and isinstance(a.value, str)
                        and a.value.endswith('"diffgpu.') and isinstance(b, ast.FormattedValue)):
                    bad.append((node.lineno, a.value + "{...}"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "diffgpu." + n
            if isinstance(node.left, ast.Constant) and node.left.value == "diffgpu.":
                bad.append((node.lineno, "diffgpu. + ..."))
    return bad


def _files():
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fn in filenames:
                if fn.endswith(".py"):
                    yield os.path.join(dirpath, fn)


def test_the_scanned_folders_hold_the_compiler():
    # a renamed folder must not drop out of the scan unnoticed
    for top in SCANNED:
        assert os.path.isdir(os.path.join(ROOT, top)), top
    scanned = {os.path.relpath(p, ROOT).split(os.sep)[0] for p in _files()}
    assert set(SCANNED) <= scanned, set(SCANNED) - scanned
    assert os.path.join(ROOT, "lowering", "gpu", "to_gpu.py") in set(_files())


def test_no_op_name_literal_outside_dialects():
    found = []
    for path in _files():
        for line, text in offending_literals(path):
            found.append(f"{os.path.relpath(path, ROOT)}:{line}: {text.strip()[:70]!r}")
    assert not found, "diffgpu op names spelled outside dialects/:\n" + "\n".join(found)


def test_the_scan_finds_a_literal(tmp_path):
    p = tmp_path / "x.py"
    p.write_text('"""Doc: "diffgpu.barrier"() is fine here."""\n'
                 'A = "diffgpu.target"\nB = op.name == "diffgpu.atomic_add"\n'
                 "C = f'\"diffgpu.{n}\"()'\nD = {'diffgpu.' + n: 1}\n"
                 'E = f"diffgpu.{fn}() is a Python builtin"\n')
    assert sorted(line for line, _ in offending_literals(str(p))) == [3, 4, 5]
