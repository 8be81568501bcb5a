"""`tape.visualize(path)`: the recorded program as a GraphViz graph.

Boxes are operations (launches, `dg.copy`, `dg.fill`) in order; ellipses
are buffer versions ("u v3": buffer u after its third recorded write).
An edge version -> operation is a read, operation -> version a write.
A version the tape copied before an overwrite is filled orange and says
which operation overwrote it (the reason of the copy); a version read as
the user's array at gradient time is green ("live, checked"). With
checkpointing, a note gives the schedule: the slots, the steps recomputed.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from diffgpu.hostdiff.tape import revolve
from diffgpu.hostdiff.tape.errors import TapeError


def _q(s: str) -> str:
    """A quoted dot string (a backslash-n in it is a line break)."""
    return '"' + str(s).replace('"', "'") + '"'


def text(tape) -> str:
    lines = ["digraph tape {", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];']
    seen = {}
    overwrote = {}
    for op in tape.ops:
        for v in op.snaps:
            overwrote[id(v)] = op

    def version(v):
        k = id(v)
        if k in seen:
            return seen[k]
        name = f"v{len(seen)}"
        seen[k] = name
        label = f"{v.buf.name.split(' of ')[0]} v{v.number}"
        if v.array is not None:
            why = f"{label}\\ncopied: {overwrote[k]!r} overwrites it"
            attrs = f'style=filled, fillcolor="orange", label={_q(why)}'
        elif v.last is not None and not tape.revolve and v is v.buf.version:
            attrs = f'style=filled, fillcolor="palegreen", label={_q(label + " (live, checked)")}'
        else:
            attrs = f"label={_q(label)}"
        lines.append(f"  {name} [shape=ellipse, {attrs}];")
        return name

    last_write = {}
    for op in tape.ops:
        node = f"op{op.index}"
        extra = (f"\\nvalue={op.value}" if op.kind == "fill" else
                 f"\\n[{op.grid}, {op.block}]" if op.kind == "launch" else "")
        lines.append(f"  {node} [shape=box, label={_q(repr(op) + extra)}];")
        for it in op.items():
            if it.read and it.version is not None:
                lines.append(f"  {version(it.version)} -> {node} [label={_q(it.name)}];")
        for it in op.items():
            if it.write:
                last_write[it.view.buf.index] = (node, it)
        if op.index + 1 < len(tape.ops):
            lines.append(f"  {node} -> op{op.index + 1} [style=dotted, arrowhead=none];")
    # the version each write created: the next version of the buffer
    created = {}
    for op in tape.ops:
        for it in op.items():
            if it.read and it.version is not None and it.version.creator is not None:
                created.setdefault(id(it.version), it.version)
    for v in list(created.values()) + [b.version for b in tape.reg.buffers if b.version]:
        if v.creator is not None:
            w = next(it for it in v.creator.items() if it.write and it.view.buf is v.buf)
            lines.append(f"  op{v.creator.index} -> {version(v)} [label={_q(w.name)}];")
    if tape.revolve:
        k = tape.checkpoints or 1
        c = revolve.counts(revolve.schedule(len(tape.ops), k)) if tape.ops else {}
        note = (f"checkpointing: {k} states of {tape.stats['state_bytes']} bytes "
                f"(state 0 copied at each buffer's first write); the reverse recomputes "
                f"{c.get('advanced', 0)} steps, restores {c.get('restores', 0)} states")
        lines.append(f"  note [shape=note, label={_q(note)}];")
    else:
        note = (f"{tape.stats['snapshots']} versions copied ({tape.stats['snapshot_bytes']} "
                "bytes): each read by a recorded operation and then overwritten")
        lines.append(f"  note [shape=note, label={_q(note)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


#: what `write` makes of a path, by its extension
TEXT = ("", ".dot", ".gv")
RENDERED = (".svg", ".png", ".pdf")


def write(tape, path: str) -> str:
    """Write `path`: GraphViz text for .dot / .gv (or no extension); for
    .svg / .png / .pdf the text goes to the .dot beside it, then GraphViz's
    `dot` program renders `path` from it. Without `dot` on PATH (or when it
    fails) a TapeError says so and names the .dot written, as the graphviz
    package's render() raises ExecutableNotFound: the file asked for is
    never silently replaced by another."""
    base, ext = os.path.splitext(path)
    if ext.lower() not in TEXT + RENDERED:
        raise TapeError(f"tape.visualize({path!r}): the path must end in .dot or .gv "
                        "(GraphViz text) or .svg, .png or .pdf (rendered by GraphViz's `dot`), "
                        f"not {ext!r}")
    rendered = ext.lower() in RENDERED
    dot_path = base + ".dot" if rendered else path
    with open(dot_path, "w", encoding="utf-8") as f:
        f.write(text(tape))
    if not rendered:
        return dot_path
    fmt = ext[1:].lower()
    exe = shutil.which("dot")
    if exe is None:
        raise TapeError(f"tape.visualize({path!r}): rendering .{fmt} needs GraphViz's `dot` "
                        f"program, which is not on PATH (install graphviz, e.g. `apt-get install "
                        f"graphviz`); the graph was written to {dot_path!r}: render it with "
                        f"`dot -T{fmt} {dot_path} -o {path}`, or ask for a .dot path")
    res = subprocess.run([exe, f"-T{fmt}", dot_path, "-o", path], capture_output=True, text=True)
    if res.returncode != 0:
        raise TapeError(f"tape.visualize({path!r}): `{exe} -T{fmt}` failed with exit status "
                        f"{res.returncode}: {(res.stderr or res.stdout).strip()[-2000:]}; the "
                        f"graph is in {dot_path!r}")
    return path


__all__ = ["text", "write"]
