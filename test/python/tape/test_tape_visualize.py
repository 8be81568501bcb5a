"""`tape.visualize(path)` and GraphViz's `dot`: a .dot / .gv path is written
as text; .svg / .png / .pdf are rendered by `dot` from the .dot written
beside them; without `dot` (or when it fails) a TapeError names the .dot
written and the command that renders it, never another file returned in
silence. `dot` is simulated here (shutil.which and subprocess.run of
dot.py), and run for real where GraphViz is installed."""
from __future__ import annotations

import os
import shutil
import sys
import types

import pytest

import diffgpu as dg
from diffgpu.hostdiff.tape import dot

sys.path.insert(0, os.path.dirname(__file__))
import tape_programs as P  # noqa: E402


@pytest.fixture
def tape():
    t, _ = P.taped("copies", P.make("copies"))
    return t


def _no_dot(monkeypatch):
    runs = []
    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    monkeypatch.setattr(dot.subprocess, "run", lambda *a, **k: runs.append(a))
    return runs


def _fake_dot(monkeypatch, returncode=0, stderr=""):
    """A `dot` at /opt/gv/bin/dot: each run's command line is kept, and a
    successful run writes its -o file."""
    runs, asked = [], []

    def which(name):
        asked.append(name)
        return "/opt/gv/bin/dot" if name == "dot" else None

    def run(cmd, **kw):
        runs.append((list(cmd), kw))
        if returncode == 0:
            with open(cmd[cmd.index("-o") + 1], "w") as f:
                f.write("<svg/>")
        return types.SimpleNamespace(returncode=returncode, stdout="", stderr=stderr)
    monkeypatch.setattr(dot.shutil, "which", which)
    monkeypatch.setattr(dot.subprocess, "run", run)
    return runs, asked


@pytest.mark.parametrize("name", ["prog.dot", "prog.gv", "prog"])
def test_text_paths_are_written_without_dot(tape, tmp_path, monkeypatch, name):
    runs = _no_dot(monkeypatch)
    out = tape.visualize(str(tmp_path / name))
    assert out == str(tmp_path / name)
    assert open(out).read() == dot.text(tape) and runs == []


@pytest.mark.parametrize("ext", ["svg", "png", "pdf"])
def test_rendering_without_dot_is_an_error_naming_the_dot_written(tape, tmp_path, monkeypatch,
                                                                   ext):
    runs = _no_dot(monkeypatch)
    path = str(tmp_path / f"prog.{ext}")
    dot_path = str(tmp_path / "prog.dot")
    with pytest.raises(dg.TapeError) as e:
        tape.visualize(path)
    msg = str(e.value)
    assert f"rendering .{ext} needs GraphViz's `dot` program, which is not on PATH" in msg
    assert f"the graph was written to {dot_path!r}" in msg
    assert f"`dot -T{ext} {dot_path} -o {path}`" in msg
    assert open(dot_path).read() == dot.text(tape)
    assert not os.path.exists(path) and runs == []


def test_rendering_runs_dot_on_the_dot_beside(tape, tmp_path, monkeypatch):
    runs, asked = _fake_dot(monkeypatch)
    path = str(tmp_path / "prog.svg")
    assert tape.visualize(path) == path
    dot_path = str(tmp_path / "prog.dot")
    assert asked == ["dot"]
    assert [cmd for cmd, _ in runs] == [["/opt/gv/bin/dot", "-Tsvg", dot_path, "-o", path]]
    assert open(dot_path).read() == dot.text(tape) and open(path).read() == "<svg/>"
    png = str(tmp_path / "g.PNG")
    assert tape.visualize(png) == png
    assert runs[-1][0] == ["/opt/gv/bin/dot", "-Tpng", str(tmp_path / "g.dot"), "-o", png]


def test_dot_failing_is_an_error_with_its_message(tape, tmp_path, monkeypatch):
    runs, _ = _fake_dot(monkeypatch, returncode=1, stderr="Error: syntax error in line 3\n")
    path = str(tmp_path / "prog.svg")
    with pytest.raises(dg.TapeError, match=r"`/opt/gv/bin/dot -Tsvg` failed with exit status 1: "
                                           r"Error: syntax error in line 3; the graph is in"):
        tape.visualize(path)
    assert len(runs) == 1 and os.path.exists(str(tmp_path / "prog.dot"))


def test_other_extensions_are_refused_before_writing(tape, tmp_path, monkeypatch):
    runs = _no_dot(monkeypatch)
    with pytest.raises(dg.TapeError, match=r"must end in .dot or .gv.*not '.txt'"):
        tape.visualize(str(tmp_path / "prog.txt"))
    assert list(tmp_path.iterdir()) == [] and runs == []


def test_visualize_before_recording_is_an_error(tmp_path):
    with pytest.raises(dg.TapeError, match="before recording"):
        dg.Tape().visualize(str(tmp_path / "prog.dot"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="GraphViz's dot is not installed")
def test_real_dot_renders_svg(tape, tmp_path):
    path = tape.visualize(str(tmp_path / "prog.svg"))
    assert open(path).read().lstrip().startswith(("<?xml", "<svg"))
