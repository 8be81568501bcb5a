"""What bench/tape.py prints of a recorded program besides times: its device
operations per recorded operation (from tape.stats and the recorded ops)
and a captured CUDA graph's nodes."""
from __future__ import annotations


def device_ops(tape, reverse_stats=None) -> dict:
    """Device operations of a recorded program's forward (its launches,
    dg.copy / dg.fill, the tape's version copies; with checkpointing the
    first-write copy of each buffer of its one state) and of its reverse
    (tape.stats' counters after one gradient(), or `reverse_stats`: their
    change over one reverse; with checkpointing the working state's copy,
    the stored and restored states, the recomputed steps as kernels), as
    kernels / copies / memsets. The fingerprints of check="end" (a
    reduction per buffer read, once per recording) are not counted."""
    ops = tape.operations
    s = reverse_stats if reverse_stats is not None else tape.stats
    state = sum(1 for b in tape.reg.buffers if b.written) if tape.revolve else 0
    kernels = sum(op.kind == "launch" for op in ops)
    copies = sum(op.kind == "copy" for op in ops) + tape.stats["snapshots"] + state
    memsets = sum(op.kind == "fill" for op in ops)
    states = (1 + s.get("stores", 0) + s.get("restores", 0)) * state
    return {"kernels": kernels + s.get("vjps", 0) + s.get("adds", 0) + s.get("recomputed", 0),
            "copies": copies + s.get("copies", 0) + states,
            "memsets": memsets + s.get("zeros", 0)}


def ops_text(ops, T) -> str:
    """'k/c/m' per recorded operation."""
    return "/".join(f"{ops[k] / T:.2f}" for k in ("kernels", "copies", "memsets"))


def graph_nodes(graph) -> dict | None:
    """The node kinds of a captured CUDA graph (CuPy's `debug_dot_str`, the
    runtime's DOT dump: one line per node, its kind in its label), or None
    where it cannot be read."""
    import re

    try:
        text = graph.graph.debug_dot_str()
    except Exception:
        return None
    out = {"kernels": 0, "copies": 0, "memsets": 0, "other": 0}
    for line in text.splitlines():
        if "->" in line or "label=" not in line:
            continue
        kind = re.search(r"KERNEL|MEMCPY|MEMSET", line, re.IGNORECASE)
        key = {"kernel": "kernels", "memcpy": "copies", "memset": "memsets"}.get(
            kind.group(0).lower() if kind else "", "other")
        out[key] += 1
    return out


__all__ = ["device_ops", "graph_nodes", "ops_text"]
