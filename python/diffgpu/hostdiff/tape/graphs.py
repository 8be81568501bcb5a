"""`tape.capture(outputs, wrt, cotangents=None)`: the recorded program and
its reverse as one replayable `TapeGraph` (CUDA graphs on a GPU).

    with dg.Tape() as tape:
        dg.copy(x, x0)                  # the program sets its own start
        for t in range(1000):
            step[grid, block](x, v, k)
        loss_kernel[grid, block](x, loss)
    g = tape.capture(loss, wrt=[x0, k])
    for it in range(100):
        g.launch()                      # forward and reverse, no Python per step
        gx0, gk = g.gradients           # the same arrays every launch, rewritten
        sgd[...](k, gk)                 # update the inputs in place

`launch()` runs the recorded operations again on the arrays' current
contents (the same arrays, scalars and geometry as recorded), copying each
version the reverse needs into the array kept for it at recording, then
the reverse of tape.gradient with the same seeds, and writes the gradients
into `gradients`. On a GPU the first `launch` is run eagerly (plans,
programs and buffers made), then the same calls are captured once on a
stream of their own into a CUDA graph (CuPy's `Stream.begin_capture` /
`end_capture`); each `launch()` is one graph launch, on the caller's current
stream (ordered with the work the caller queues before and after it). Every allocation made
while capturing is kept for the graph's lifetime (the graph's nodes write
to them; handed back to CuPy's pool, other arrays would get them). On the
host `launch()` makes the same calls one after another.

A graph holding launches of programs whose heap tape's overflow flag is
watched (runtime/gpu.py `GpuProgram.watch_tape`) ends with a copy of each
such flag to a pinned host word; its `launch()` then waits for the replay
(one synchronisation) and raises the LaunchError of an overflow before it
returns (runtime/graph_flags.py). A graph without one reads nothing and
returns at once. On the host each launch reads its flag itself.

A checkpointed tape is not captured (its schedule restores and recomputes
states; capture a tape that keeps every version). Fingerprints are checked
once, when the graph is made: what the graph reads at launch is by
definition the arrays' contents then.
"""
from __future__ import annotations

from diffgpu.hostdiff import buffers as M
from diffgpu.hostdiff.tape import reverse
from diffgpu.hostdiff.tape.arrays import as_array, is_float_array
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.hostdiff.tape.versions import Item


class TapeGraph:
    def __init__(self, tape, outputs, wrt, cotangents=None):
        if tape.revolve:
            raise TapeError("tape.capture(): a checkpointed tape (checkpoints= / "
                            "memory_limit=) cannot be captured; record with dg.Tape()")
        self.tape = tape
        self.pairs = [(y, M.copy(s), w) for y, s, w in tape._seeds(outputs, cotangents)]
        self.single = not isinstance(wrt, (list, tuple))
        self.wrt = [as_array(w) for w in ([wrt] if self.single else list(wrt))]
        for k, w in enumerate(self.wrt):
            if not is_float_array(w):
                raise TapeError(f"tape.capture: wrt[{k}] must be a float array")
        tape.verify_live()
        xp = M.xp_of(self.pairs[0][0])
        self.results = [xp.zeros(w.shape, w.dtype) for w in self.wrt]
        #: the buffers whose adjoints are results: the reverse drops the others'
        #: as soon as no earlier operation reads them
        self.keep = frozenset(b.index for b in (tape.reg.view(w, "wrt", create=False)[0]
                                                for w in self.wrt) if b is not None)
        self.on_gpu = tape.device != "cpu"
        self.graph = self.stream = None
        #: the tape overflow flags the graph reads at each replay (a GraphFlags),
        #: None when it launches no watched program
        self.flags = None
        self._kept: list = []
        self.launches = 0

    @property
    def gradients(self):
        """The arrays the latest launch wrote (one list, the same arrays)."""
        return self.results[0] if self.single else list(self.results)

    def launch(self):
        """Run the program and its reverse once; returns `gradients`. On a
        GPU, a graph holding launches of programs whose tape overflow flag
        is watched waits for the replay and raises the LaunchError of an
        overflow before returning (runtime/graph_flags.py)."""
        with M.device_scope(self.pairs[0][0]):
            if not self.on_gpu:
                self._run()
            elif self.graph is None:
                import cupy

                from diffgpu.runtime.graph_flags import GraphFlags
                # eagerly first, on the stream the capture will use: plans, programs,
                # pools, and the per-stream scratch of the programs (made with a
                # synchronize, which a capturing stream does not allow)
                self.stream = cupy.cuda.Stream(non_blocking=True)
                flags = GraphFlags()
                with self.stream, flags.collecting():
                    self._run()
                self.stream.synchronize()
                self._capture(flags)
            else:  # on the caller's stream: ordered with what it runs before and after
                import cupy
                stream = cupy.cuda.get_current_stream()
                self.graph.launch(stream)
                if self.flags is not None:  # watched programs: one sync, the flags read
                    self.flags.check(stream)
        self.launches += 1
        return self.gradients

    def synchronize(self) -> None:
        """Wait for the latest launch (the current stream, on a GPU)."""
        if self.on_gpu:
            import cupy
            cupy.cuda.get_current_stream().synchronize()

    def _run(self) -> None:
        """The recorded operations with their version copies, then the reverse."""
        tape = self.tape
        for op in tape.ops:
            for v in op.snaps:
                v.array[...] = v.buf.root
            reverse.forward_op(op, lambda item: item.view.buf.root)
        adj = reverse.Adjoints(self.keep)
        for y, seed, what in self.pairs:
            _, view = tape.reg.view(y, f"the output {what}")
            adj.add(Item(view, what, True, False, None), M.copy(seed))
        reverse.sweep_versions(tape, adj)
        for w, out in zip(self.wrt, self.results):
            buf, view = tape.reg.view(w, "wrt", create=False)
            if buf is None or buf.index not in adj.roots:
                out[...] = 0
            else:
                out[...] = view.on(adj.roots[buf.index])

    def _capture(self, flags) -> None:
        """Capture `_run` into `self.graph`; `flags` (a GraphFlags) noted the
        watched programs of the eager run: the graph ends with the copies of
        their flags to the host (runtime/graph_flags.py)."""
        import cupy

        pool = cupy.get_default_memory_pool()
        kept = self._kept

        def keep(n):
            p = pool.malloc(n)
            kept.append(p)
            return p
        flags.reserve()
        old = cupy.cuda.get_allocator()
        cupy.cuda.set_allocator(keep)
        try:
            with self.stream:
                self.stream.begin_capture()  # relaxed: the pool may grow
                try:
                    with flags.collecting():
                        self._run()
                    flags.read_in_graph(self.stream)
                except BaseException:
                    _end_quietly(self.stream)  # a partial graph is never replayed
                    raise
                self.flags = flags if flags.flags else None
                self.graph = self.stream.end_capture()
        finally:
            cupy.cuda.set_allocator(old)


def _end_quietly(stream) -> None:
    """End a capture that failed: its graph is dropped, and the error that
    stopped it, not end_capture's about the broken capture, is the one the
    caller sees."""
    try:
        stream.end_capture()
    except Exception:  # noqa: BLE001  (an invalidated capture: the first error is raised)
        return


__all__ = ["TapeGraph"]
