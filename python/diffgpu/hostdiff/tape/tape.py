"""`dg.Tape`: record a program of launches, differentiate all of it.

    with dg.Tape() as tape:
        for t in range(T):
            step[grid, block](x, v, f, k)
        loss_kernel[grid, block](x, loss)
    gx0, gk = tape.gradient(loss, wrt=[x, k])

`gradient(outputs, wrt, cotangents=None)`: the gradients of the recorded
program's final values of `outputs` (seeded with 1 when each has one
element, else with `cotangents`) with respect to the values the `wrt`
arrays held when recording began: new arrays of their dtypes and shapes,
zeros for an array the program never touched. It may be called again
(fresh results, nothing accumulates); the arrays keep their forward values
and the seeds are not modified. Recording: record.py; the reverse:
reverse.py; checkpointing: revolve.py; `visualize`: dot.py; CUDA graphs:
graphs.py. docs/tape.md is the user's guide.
"""
from __future__ import annotations

import numpy as np

from diffgpu.errors import user_facing
from diffgpu.hostdiff import buffers as M
from diffgpu.hostdiff.tape import reverse
from diffgpu.hostdiff.tape.arrays import as_array, device_of, is_float_array, torch_view
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.hostdiff.tape.record import Recording, current_hook
from diffgpu.runtime import fastpath, torch16
from diffgpu.runtime.args import is_device_array


def _is_array(a) -> bool:
    return isinstance(a, np.ndarray) or is_device_array(a)


class Tape(Recording):
    """Records every launch, `dg.copy` and `dg.fill` made inside `with`.

    `checkpoints=k`: keep at most k states (the initial one included) and
    recompute in the reverse (Revolve); `memory_limit=bytes`: as many
    states as fit. `check=`: "auto" (fingerprints at every use on the host,
    at the end of recording on a GPU), "launch", "end" (record.py)."""

    @user_facing
    def __init__(self, checkpoints=None, memory_limit=None, check="auto"):
        super().__init__(checkpoints, memory_limit, check)

    @user_facing
    def __enter__(self):
        return super().__enter__()

    def __repr__(self) -> str:
        mode = (f"checkpoints={self.checkpoints}" if self.checkpoints is not None
                else f"memory_limit={self.memory_limit}" if self.revolve else "all versions")
        return f"<dg.Tape {self.state}, {len(self.ops)} operations, {mode}>"

    @property
    def operations(self) -> list:
        """The recorded operations, in order (`repr`: "#3 step[64]")."""
        return list(self.ops)

    # -- the reverse ------------------------------------------------------------
    def _ready(self, what: str) -> None:
        if self.state == "new":
            raise TapeError(f"tape.{what}() before recording: use `with dg.Tape() as tape:`")
        if self.state == "recording":
            raise TapeError(f"tape.{what}() inside the tape's own `with` block; call it "
                            "after the block")
        if fastpath.RECORD is not None and current_hook() is not None:
            raise TapeError(f"tape.{what}() inside a recording dg.Tape; tapes do not nest")
        self._usable()

    def _seeds(self, outputs, cotangents) -> list:
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if not outs:
            raise TapeError("tape.gradient: no outputs to differentiate")
        if cotangents is not None:
            cots = list(cotangents) if isinstance(cotangents, (list, tuple)) else [cotangents]
            if len(cots) != len(outs):
                raise TapeError(f"tape.gradient: {len(outs)} outputs but {len(cots)} "
                                "cotangents; give one per output")
        pairs = []
        for k, y in enumerate(outs):
            what = f"output {k}" if len(outs) > 1 else "the output"
            if not _is_array(y) or not is_float_array(as_array(y)):
                raise TapeError(f"tape.gradient: {what} must be a float array, got "
                                f"{type(y).__name__}")
            y = as_array(y)
            self._same_device(y, what)
            if cotangents is None:
                if y.size != 1:
                    raise TapeError(f"tape.gradient: {what} has shape {tuple(y.shape)}; a "
                                    "loss has one element (shape () or (1,)); give "
                                    "cotangents=[...] for other outputs")
                seed = M.xp_of(y).ones(y.shape, y.dtype)
            else:
                seed = cots[k]
                if not _is_array(seed):
                    raise TapeError(f"tape.gradient: the cotangent of {what} must be an "
                                    f"array, got {type(seed).__name__}")
                seed = as_array(seed)
                if tuple(seed.shape) != tuple(y.shape) or seed.dtype != y.dtype:
                    raise TapeError(f"tape.gradient: the cotangent of {what} has shape "
                                    f"{tuple(seed.shape)} and dtype {seed.dtype}; the output "
                                    f"{tuple(y.shape)} and {y.dtype}: they must match")
                if device_of(seed) != device_of(y):
                    raise TapeError(f"tape.gradient: the cotangent of {what} is on another "
                                    "device than the output")
            pairs.append((y, seed, what))
        return pairs

    def _same_device(self, a, what) -> None:
        if self.device is not None and device_of(a) != self.device:
            raise TapeError(f"tape.gradient: {what} is on another device than the recorded "
                            "program")

    @user_facing
    def gradient(self, outputs, wrt, cotangents=None):
        """Gradients of the final `outputs` w.r.t. the initial `wrt` arrays
        (a list of new arrays for a list `wrt`, one array for one array)."""
        self._ready("gradient")
        pairs = self._seeds(outputs, cotangents)
        single = not isinstance(wrt, (list, tuple))
        ws = [wrt] if single else list(wrt)
        for k, w in enumerate(ws):
            if not _is_array(w) or not is_float_array(as_array(w)):
                raise TapeError(f"tape.gradient: wrt[{k}] must be a float array, got "
                                f"{type(w).__name__}" + (f" {as_array(w).dtype}"
                                                         if _is_array(w) else ""))
            self._same_device(as_array(w), f"wrt[{k}]")
        self.verify_live()
        adj = reverse.Adjoints()
        for y, seed, what in pairs:
            buf, view = self.reg.view(y, f"tape.gradient's {what}")
            from diffgpu.hostdiff.tape.versions import Item
            adj.add(Item(view, what, True, False, None), M.copy(seed))
        with M.device_scope(pairs[0][0]):
            if self.revolve:
                reverse.sweep_revolve(self, adj)
            else:
                reverse.sweep_versions(self, adj)
            out = [self._result(w, adj) for w in ws]
        return out[0] if single else out

    def _result(self, w, adj):
        """The gradient of `w`: a new array (a torch tensor for a bfloat16
        torch tensor: CuPy's bfloat16 is seen by torch through DLPack only)."""
        torch = torch16.handles(w)
        w = as_array(w)
        xp = M.xp_of(w)
        buf, view = self.reg.view(w, "wrt", create=False)
        if buf is None or buf.index not in adj.roots:
            out = xp.zeros(w.shape, w.dtype)
        else:
            out = xp.array(view.on(adj.roots[buf.index]), copy=True)
        return torch_view(out) if torch else out

    # -- tools ----------------------------------------------------------------
    @user_facing
    def visualize(self, path: str) -> str:
        """Write the recorded program as GraphViz to `path` (.dot or .gv;
        .svg / .png / .pdf rendered by GraphViz's `dot` program, with the
        .dot beside it: without `dot` a TapeError, the .dot written).
        Returns the path written."""
        from diffgpu.hostdiff.tape.dot import write

        if self.state == "new":
            raise TapeError("tape.visualize() before recording")
        return write(self, path)

    @user_facing
    def capture(self, outputs, wrt, cotangents=None):
        """The recorded program and its reverse as one replayable object
        (`graphs.TapeGraph`): CUDA graphs on a GPU, the same sequence of
        calls on the host."""
        from diffgpu.hostdiff.tape.graphs import TapeGraph

        self._ready("capture")
        return TapeGraph(self, outputs, wrt, cotangents)


__all__ = ["Tape"]
