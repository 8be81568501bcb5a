"""The docs are part of the product: their examples run, they name every
public function (with its parameters), every diffgpu-opt pass, option and
flag, their links resolve, and nothing in the repo points outside it."""
import inspect
import os
import re
import subprocess
import sys
import tempfile

import pytest

import diffgpu as dg

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOCS = os.path.join(REPO, "docs")
sys.path.insert(0, os.path.join(REPO, "scripts"))
import doc_examples  # noqa: E402


def _read(name):
    with open(os.path.join(DOCS, name)) as f:
        return f.read()


def _doc_files():
    return sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))


def _with_examples():
    return [f for f in _doc_files()
            if any(s is None for _, _, s in doc_examples.blocks(_read(f)))]


def test_docs_have_examples():
    assert {"guide.md", "language.md", "api.md", "diffgpu-opt.md", "gpu.md", "limits.md",
            "seed.md"} <= set(_doc_files())
    assert {"guide.md", "language.md", "gpu.md", "seed.md"} <= set(_with_examples())


@pytest.mark.parametrize("name", _with_examples())
def test_doc_examples_run(name):
    path = os.path.join(DOCS, name)
    missing = doc_examples.missing_requirements(path)
    if missing:
        pytest.skip(f"docs/{name} needs {', '.join(missing)}, not installed")
    res = doc_examples.run_file(path)
    assert res.returncode == 0, (f"docs/{name}: an example failed (the line numbers "
                                 f"are the doc's)\n{res.stdout[-2000:]}{res.stderr[-4000:]}")


def test_runner_keeps_doc_line_numbers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("# t\n\n```python\na = 1\n```\n\n<!-- doctest: skip (demo) -->\n"
                   "```python\nraise SystemExit(3)\n```\n\n```python\nassert a == 2\n```\n")
    assert [(line, skip) for line, _, skip in doc_examples.blocks(doc.read_text())] == [
        (4, None), (9, "demo"), (13, None)]
    res = doc_examples.run_file(str(doc))
    assert res.returncode == 1 and "line 13" in res.stderr


def test_runner_skips_a_block_whose_module_is_missing(tmp_path):
    """`<!-- doctest: requires MOD -->` before a block: the block runs where
    MOD is installed and is skipped ("needs MOD") where it is not; the other
    blocks of the file run either way."""
    doc = tmp_path / "x.md"
    doc.write_text("```python\na = 1\n```\n\n<!-- doctest: requires json -->\n"
                   "```python\nimport json\na = 2\n```\n\n"
                   "<!-- doctest: requires json diffgpu_no_such_module -->\n"
                   "```python\nraise SystemExit(3)\n```\n\n```python\nassert a == 2\n```\n")
    assert [(line, skip) for line, _, skip in doc_examples.blocks(doc.read_text())] == [
        (2, None), (7, None), (13, "needs diffgpu_no_such_module"), (17, None)]
    res = doc_examples.run_file(str(doc))
    assert res.returncode == 0, res.stderr


def test_runner_leaves_no_temp_dirs(tmp_path, monkeypatch):
    """The scratch directory and what the examples make with `tempfile` are
    removed: nothing is left in the system's temporary directory."""
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    doc = tmp_path / "x.md"
    doc.write_text("```python\nimport os, tempfile\nd = tempfile.mkdtemp()\n"
                   "open(os.path.join(d, 'f'), 'w').close()\nprint(d)\n```\n")
    res = doc_examples.run_file(str(doc))
    assert res.returncode == 0, res.stderr
    made = res.stdout.strip()
    assert made and not os.path.exists(made)
    assert list(system_tmp.iterdir()) == []


def test_every_public_name_is_documented():
    api = _read("api.md")
    missing = [n for n in dg._API if f"dg.{n}" not in api]
    missing += [n for n in dg._builtins() if f"dg.{n}" not in api]
    missing += [f"{m}.op" for m in ("torch", "jax") if f"dg.{m}.op(" not in api]
    assert not missing, f"docs/api.md does not mention: {', '.join(missing)}"


def test_public_functions_documented_with_their_parameters():
    api_lines = _read("api.md").splitlines()
    problems = []
    for n in dg._API:
        fn = getattr(dg, n)
        if not inspect.isfunction(fn) or getattr(fn, "__diffgpu_builtin__", None):
            continue
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind is not p.VAR_KEYWORD]
        lines = [line for line in api_lines if f"dg.{n}(" in line]
        if not any(all(p in line for p in params) for line in lines):
            problems.append(f"dg.{n}({', '.join(params)})")
    assert not problems, "docs/api.md lacks a signature line for: " + "; ".join(problems)


def test_public_objects_have_docstrings():
    from diffgpu.api import Launcher

    objs = [getattr(dg, n) for n in dg._API if n != "__version__"]
    objs += [dg.Kernel.ir, Launcher, dg.CompiledKernel.launch]
    undocumented = [getattr(o, "__name__", repr(o)) for o in objs
                    if not (inspect.getdoc(o) or "").strip()]
    assert not undocumented, f"no docstring: {undocumented}"


def test_diffgpu_opt_reference_is_complete():
    import dataclasses

    from diffgpu.lowering import registry

    doc = _read("diffgpu-opt.md")
    missing = []
    for name, cls in registry.passes().items():
        fields = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        missing += [name] if f"`{name}`" not in doc else []
        missing += [f"{name} option {f}" for f in fields if f"`{f}`" not in doc]
    for name, info in registry.pipelines().items():
        missing += [name] if f"`{name}`" not in doc else []
        missing += [f"{name} option {f.name}" for f in dataclasses.fields(info.options)
                    if f"`{f.name}`" not in doc]
    help_text = subprocess.run([sys.executable, "-m", "diffgpu.tools.diffgpu_opt", "--help"],
                               capture_output=True, text=True).stdout
    flags = set(re.findall(r"^\s+(--?[a-zA-Z][\w-]*)", help_text, re.M))
    assert len(flags) > 10, help_text
    missing += [f"flag {f}" for f in sorted(flags) if f"`{f}" not in doc]
    assert not missing, "docs/diffgpu-opt.md does not describe: " + ", ".join(missing)


def _tracked_files():
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.splitlines()
            if f.endswith((".py", ".md", ".mlir", ".txt", ".toml", ".sh", ".cfg"))]


def test_nothing_points_outside_the_repo():
    needles = ("../" + "shared", "SPEC" + ".md", "STYLE" + ".md", "SPEC" + "'s",
               "shared/" + "seeds")
    bad = []
    for f in _tracked_files():
        with open(os.path.join(REPO, f), errors="replace") as fh:
            text = fh.read()
        bad += [f"{f}: {n}" for n in needles if n in text]
    assert not bad, "files referring to paths outside the repo: " + "; ".join(bad)


_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.S | re.M)


def test_doc_links_resolve():
    broken = []
    for base, names in ((DOCS, _doc_files()), (REPO, ["README.md"])):
        for name in names:
            with open(os.path.join(base, name)) as f:
                text = f.read()
            for target in _LINK.findall(_CODE.sub("", text)):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = os.path.normpath(os.path.join(base, target.split("#")[0]))
                if not os.path.exists(path):
                    broken.append(f"{name} -> {target}")
    assert not broken, "broken links: " + ", ".join(broken)
