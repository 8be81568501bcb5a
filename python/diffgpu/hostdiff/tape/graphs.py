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
from diffgpu.hostdiff.tape.record import Item


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
        self._kept: list = []
        self.launches = 0

    @property
    def gradients(self):
        """The arrays the latest launch wrote (one list, the same arrays)."""
        return self.results[0] if self.single else list(self.results)

    def launch(self):
        """Run the program and its reverse once; returns `gradients`."""
        with M.device_scope(self.pairs[0][0]):
            if not self.on_gpu:
                self._run()
            elif self.graph is None:
                import cupy
                # eagerly first, on the stream the capture will use: plans, programs,
                # pools, and the per-stream scratch of the programs (made with a
                # synchronize, which a capturing stream does not allow)
                self.stream = cupy.cuda.Stream(non_blocking=True)
                with self.stream:
                    self._run()
                self.stream.synchronize()
                self._capture()
            else:  # on the caller's stream: ordered with what it runs before and after
                import cupy
                self.graph.launch(cupy.cuda.get_current_stream())
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

    def _capture(self) -> None:
        import cupy

        pool = cupy.get_default_memory_pool()
        kept = self._kept

        def keep(n):
            p = pool.malloc(n)
            kept.append(p)
            return p
        old = cupy.cuda.get_allocator()
        cupy.cuda.set_allocator(keep)
        try:
            with self.stream:
                self.stream.begin_capture()  # relaxed: the pool may grow
                try:
                    self._run()
                finally:
                    self.graph = self.stream.end_capture()
        finally:
            cupy.cuda.set_allocator(old)


__all__ = ["TapeGraph"]
