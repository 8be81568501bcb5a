"""What a recorded launch costs, counted (not timed), on the CuPy stand-in of
bench/tape_overhead.py (kernels compile for sm_90 here and do nothing; the
CUDA calls the tape makes are counted): the copies are exactly one per
version read and then overwritten, each one cudaMemcpyAsync and no CuPy
array, the small ones carved from one pool allocation per chunk (not one
each); recording with check="end" reads nothing
back from the GPU; the end of recording fingerprints with one read back for
all buffers; a loop finds each launch's plan without planning again."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import diffgpu as dg

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402
import tape_programs as P  # noqa: E402

N = 256


@pytest.fixture
def counted(monkeypatch):
    """The stand-in, its class patches undone afterwards, with counters on
    every CUDA call the tape can make."""
    import tape_overhead as TO
    from diffgpu.hostdiff.tape import arrays
    from diffgpu.runtime import gpu

    S = LO.StandinArray
    for name in ("__init__", "__iadd__", "__setitem__", "__getitem__", "base", "get"):
        monkeypatch.setattr(S, name, getattr(S, name, None), raising=False)
    real = arrays.device_fingerprints
    monkeypatch.setattr(arrays, "device_fingerprints", real)
    monkeypatch.setattr(gpu, "_chips", gpu._chips)
    TO.install_standin()
    cp = sys.modules["cupy"]
    arrays.device_fingerprints = real  # device.py's, on a stand-in kernel: its calls counted
    n = {"alloc": 0, "memcpy": 0, "stream": 0, "ndarray": 0, "get": 0, "sync": 0,
         "fp_kernel": 0, "compile": 0}
    alloc, memcpy, stream = cp.cuda.alloc, cp.cuda.runtime.memcpyAsync, cp.cuda.get_current_stream

    def count(key, fn):
        def call(*a, **k):
            n[key] += 1
            return fn(*a, **k)
        return call
    cp.cuda.alloc = count("alloc", alloc)
    cp.cuda.runtime.memcpyAsync = count("memcpy", memcpy)
    cp.cuda.get_current_stream = count("stream", stream)
    cp.cuda.runtime.deviceSynchronize = count("sync", lambda: None)
    cp.ndarray = type("ndarray", (S,), {"__init__": count("ndarray", S.__init__)})

    def raw_kernel(source, name):
        n["compile"] += 1
        return count("fp_kernel", lambda grid, block, args: None)
    cp.RawKernel = raw_kernel
    S.get = count("get", lambda self: self._h.copy())
    from diffgpu.hostdiff.tape import device
    monkeypatch.setattr(device, "_KERNEL", {})
    yield S, n
    sys.modules.pop("cupy", None)


def _arrays(S, rng=np.random.default_rng(3)):
    mk = lambda: S(rng.standard_normal(N).astype(np.float32))  # noqa: E731
    return mk(), mk(), mk(), mk(), S(np.zeros(1, np.float32))


def _record(steps, x, v, f, k, loss, inside=None):
    g = (N + P.B - 1) // P.B
    with dg.Tape(check="end") as tape:
        for _ in range(steps):
            P.spring_force[g, P.B](f, x, k)
            P.integrate[g, P.B](x, v, f, np.float32(0.01))
        P.sq_loss[g, P.B](x, loss)
        if inside is not None:
            inside(tape)
    return tape


def test_a_loop_copies_each_read_then_overwritten_version_once(counted):
    """spring: force(f <- x, k) then integrate(x, v <- x, v, f). Step 1
    overwrites x and v, both read (x by force and by itself): 2 copies; from
    step 2 on f too (read by the last integrate): 3 per step; the loss's
    atomic add reads and writes it: 1 more. Each copy is
    one cudaMemcpyAsync on the current stream (one stream query) and no
    array, into the tape's chunk of pool memory: all of them (1 KiB each)
    fit one allocation; an array is made when the reverse reads it."""
    S, n = counted
    arrs = _arrays(S)
    _record(2, *arrs)  # programs, roles and the fingerprint kernel: made once
    for steps in (10, 25):
        for key in n:
            n[key] = 0
        tape = _record(steps, *arrs)
        copies = 2 + 3 * (steps - 1) + 1
        assert tape.stats["snapshots"] == copies
        assert tape.stats["snapshot_bytes"] == (copies - 1) * N * 4 + 4
        assert (n["alloc"], n["memcpy"]) == (1, copies), n
        assert n["stream"] == copies + 1, n  # and the fingerprints' launch at the end
        assert n["ndarray"] == 0, n
        assert sum(len(op.snaps) for op in tape.operations) == copies
        assert len(tape.operations) == 2 * steps + 1
    versions = [v for op in tape.operations for v in op.snaps]
    assert all(v.copy is not None for v in versions)
    assert versions[0].array is not None and n["ndarray"] == 1  # made when read, once
    assert versions[0].array is versions[0].array and n["ndarray"] == 1


def test_small_copies_share_chunks_and_large_ones_are_their_own(counted, monkeypatch):
    """The copies are carved from chunks of the pool (device.py `Arena`):
    with chunks of 8 KiB, 8 copies of 1 KiB per allocation, each at a
    256-byte aligned place of its own holding its buffer's bytes; a copy
    larger than `_SMALL` is one allocation of its own; a copy on another
    stream starts a chunk of that stream."""
    from diffgpu.hostdiff.tape import device as D

    S, n = counted
    x, v, f, k, loss = arrs = _arrays(S)
    g = (N + P.B - 1) // P.B
    _record(2, *arrs)
    monkeypatch.setattr(D, "CHUNK", 8192)
    for key in n:
        n[key] = 0
    tape = _record(12, *arrs)
    copies = 2 + 3 * 11 + 1
    assert n["memcpy"] == copies
    assert n["alloc"] == -(-((copies - 1) * N * 4 + 256) // 8192), n  # 5, not 36
    snaps = [v for op in tape.operations for v in op.snaps]
    spans = sorted((v.copy.ptr + v.at, v.copy.ptr + v.at + v.buf.nbytes) for v in snaps)
    assert all(lo % 256 == 0 for lo, _ in spans)
    assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:]))  # no shared bytes
    # (the stand-in's kernels do nothing: every version holds its buffer's bytes)
    assert all(np.array_equal(v.array._h, v.buf.root._h) for v in snaps)

    monkeypatch.setattr(D, "_SMALL", 512)  # 1 KiB copies are large now
    for key in n:
        n[key] = 0
    _record(5, *arrs)
    copies = 2 + 3 * 4 + 1
    # one allocation per 1 KiB copy, and the chunk the loss's 4 bytes are carved from
    assert (n["alloc"], n["memcpy"]) == (copies - 1 + 1, copies), n
    monkeypatch.setattr(D, "CHUNK", 1 << 21)
    monkeypatch.setattr(D, "_SMALL", (1 << 21) // 8)

    cp = sys.modules["cupy"]
    streams = [type("Stream", (), {"ptr": 0})(), type("Stream", (), {"ptr": 77})()]
    use = [0]
    monkeypatch.setattr(cp.cuda, "get_current_stream", lambda: streams[use[0]])
    for key in n:
        n[key] = 0

    def on_another_stream(tape):
        use[0] = 1
        P.spring_force[g, P.B](f, x, k)  # overwrites f, read by the last integrate
    tape = _record(3, *arrs, inside=on_another_stream)
    assert n["alloc"] == 2, n  # one chunk per stream
    arena = tape.reg.arenas[0]  # the stream's chunk, begun by that copy
    last = tape.operations[-1].snaps[0]
    assert arena.stream == 77 and last.copy is arena.chunk and last.at == 0


def test_a_recorded_launch_keeps_its_op_versions_and_lists_only(counted):
    """What a recorded loop keeps per step (spring: force then integrate),
    counted by type among the objects the garbage collector tracks: an
    `Op` per launch with the list of versions it read, a `Version` per
    buffer written (f; x, v), per launch that copies the list of versions
    copied: nothing else per step (the arguments are the plan's, a copy is
    a range of the tape's chunk: no object per copy; a version keeps no
    list of readers, nor an Op or a Version a dictionary)."""
    import gc
    from collections import Counter

    S, n = counted
    x, v, f, k, loss = arrs = _arrays(S)
    g, dt = (N + P.B - 1) // P.B, np.float32(0.01)

    def steps(count, f=f, x=x, k=k, v=v):
        for _ in range(count):
            P.spring_force[g, P.B](f, x, k)
            P.integrate[g, P.B](x, v, f, dt)
    # first a host tape of many versions, none of which is ever given a GPU
    # copy's offset (`at`): the versions after it keep no dictionary either
    # (record.py `_prime`)
    rng = np.random.default_rng(5)
    host = [rng.standard_normal(N).astype(np.float32) for _ in range(4)]
    with dg.Tape():
        steps(40, *host)
    _record(2, *arrs)

    def kept():
        return Counter(type(o).__name__ for o in gc.get_objects())
    gc.collect()
    gc.disable()
    try:
        with dg.Tape(check="end"):
            steps(3)
            before = kept()
            steps(20)
            after = kept()
    finally:
        gc.enable()
    after["Counter"] -= 1  # (`before` itself)
    grown = {name: c for name, c in (after - before).items() if c}
    mine = {name: grown.pop(name, 0) for name in ("Op", "Version", "list", "dict")}
    assert mine == {"Op": 2 * 20, "Version": 3 * 20, "list": (2 + 2) * 20, "dict": 0}, mine
    # nothing else per step, let alone per launch or copy (what other tests left
    # behind may make a few objects meanwhile)
    assert all(c < 20 for c in grown.values()), grown


def test_recording_reads_nothing_back_and_the_end_reads_once(counted):
    """check="end" (the GPU's default): no read back and no synchronize
    while the launches are recorded; at the end one fingerprint launch per
    buffer the reverse reads as it is, one read back for all of them, and
    gradient() the same once more."""
    S, n = counted
    arrs = _arrays(S)
    _record(2, *arrs)
    for key in n:
        n[key] = 0
    seen = {}

    def inside(tape):
        seen.update(n)
    tape = _record(6, *arrs, inside=inside)
    assert (seen["get"], seen["sync"], seen["fp_kernel"]) == (0, 0, 0), seen
    live = tape.needed_live()
    # read at their last version: x (by the loss), f (by the last integrate), k
    assert sorted(b.name.split("'")[1] for b in live) == ["f", "k", "x"]
    assert (n["get"], n["fp_kernel"], n["compile"]) == (1, len(live), 0), n
    tape.verify_live()
    assert (n["get"], n["fp_kernel"]) == (2, 2 * len(live)), n


def test_a_loop_plans_each_kernel_once_per_tape(counted, monkeypatch):
    """A loop's launches find their plan by one comparison of launch keys:
    the tape plans once per kernel (three here, whatever the steps), and no
    read/write analysis runs for arrays seen by an earlier tape."""
    from diffgpu.hostdiff import plan as PL
    from diffgpu.hostdiff.tape import record

    S, n = counted
    arrs = _arrays(S)
    _record(2, *arrs)
    plans, calls = [], []
    real_plan, real_call = record.Recording._plan, PL.Call.__init__
    monkeypatch.setattr(record.Recording, "_plan",
                        lambda self, *a: plans.append(a[0].name) or real_plan(self, *a))
    monkeypatch.setattr(PL.Call, "__init__", lambda self, *a, **k: calls.append(1)
                        or real_call(self, *a, **k))
    tape = _record(40, *arrs)
    assert sorted(plans) == ["integrate", "spring_force", "sq_loss"], plans
    assert calls == []
    # the Items, made from each launch's record when first asked for
    ops = tape.operations
    assert ops[0]._args is None
    items = ops[3].items()
    assert [it.name for it in items] == ["x", "v", "f"]
    assert [(it.read, it.write) for it in items] == [(True, True), (True, True), (True, False)]
    assert items[0].version.creator is ops[1] and items[2].version.creator is ops[2]
    assert ops[3] in tape.readers(items[0].version) and items[0].version.array is not None
    assert items[0].version.last is ops[3]


def test_a_ping_pong_finds_its_plans_and_launches_by_comparison(counted, monkeypatch):
    """heat's ping-pong (lap_step(t <- u), lap_step(u <- t), ...): the
    kernel's two launch keys are both kept with their plan and their
    fastpath.Ready, so after the first launch of each the tape plans
    nothing and no launch looks its key up again (fastpath.run_keyed runs
    only the first launch of each key)."""
    from diffgpu.hostdiff.tape import record
    from diffgpu.runtime import fastpath

    S, n = counted
    rng = np.random.default_rng(5)
    u, t, w = (S(rng.standard_normal(N).astype(np.float32)) for _ in range(3))
    loss = S(np.zeros(1, np.float32))
    g, c = (N + P.B - 1) // P.B, np.float32(0.25)

    def record_heat(steps):
        with dg.Tape(check="end") as tape:
            for _ in range(steps):
                P.lap_step[g, P.B](t, u, c)
                P.lap_step[g, P.B](u, t, c)
            P.dot_loss[g, P.B](u, w, loss)
        return tape
    record_heat(2)  # programs and roles
    plans, keyed = [], []
    real_plan, real_keyed = record.Recording._plan, fastpath.run_keyed
    monkeypatch.setattr(record.Recording, "_plan",
                        lambda self, *a: plans.append(a[0].name) or real_plan(self, *a))
    monkeypatch.setattr(fastpath, "run_keyed", lambda *a: keyed.append(a[0].name)
                        or real_keyed(*a))
    at = fastpath.STATS["fast_reuse"], fastpath.STATS["fast_checked"]
    tape = record_heat(30)
    assert sorted(plans) == ["dot_loss", "lap_step", "lap_step"], plans
    assert sorted(keyed) == ["dot_loss", "lap_step", "lap_step"], keyed
    # every launch ran a Ready (dot_loss's a new one when its launches before this
    # test took the full path only)
    assert fastpath.STATS["fast_reuse"] - at[0] + fastpath.STATS["fast_checked"] - at[1] == 61
    assert tape.stats["snapshots"] == 2 * 30 - 1 + 1  # (u's first version: read, then written)


def test_a_kept_ready_is_not_run_once_the_programs_are_dropped(counted, monkeypatch):
    """A recording keeps a launch's Ready only while it is live: dropping
    the kernel's programs mid-recording sends its next launches through
    fastpath.run_keyed (the driver's bind: the program loaded again), and
    the Ready it had is dead."""
    from diffgpu.hostdiff.tape import record as R
    from diffgpu.runtime import fastpath

    S, n = counted
    x, v, f, k, loss = arrs = _arrays(S)
    _record(2, *arrs)
    keyed = []
    real_keyed = fastpath.run_keyed
    monkeypatch.setattr(fastpath, "run_keyed", lambda *a: keyed.append(a[0].name)
                        or real_keyed(*a))
    g = (N + P.B - 1) // P.B

    def drop(tape):
        hook = fastpath.RECORD
        (old,) = [e[2] for e in hook.recent[P.integrate] if e is not R._NONE]
        P.integrate._programs.clear()
        del keyed[:]
        for _ in range(3):
            P.integrate[g, P.B](x, v, f, np.float32(0.01))
        # the first launch after the drop: bind's full path (the Table cleared, the
        # kept Ready dead); the second: a new Ready; the third runs it
        assert keyed == ["integrate", "integrate"] and not old.live
        (new,) = [e[2] for e in hook.recent[P.integrate] if e is not R._NONE]
        assert new is not old and new.live
    _record(3, *arrs, inside=drop)


def test_a_dropped_tape_gives_its_copies_back_at_once():
    """A tape's operations and versions refer to each other, but the tape
    itself is in no cycle: dropping it releases every copy it made there and
    then (a GPU pool reuses the memory for the next recording), without
    waiting for the garbage collector."""
    import gc
    import weakref

    x = np.linspace(0.5, 1.5, 12)
    c, loss = np.full(12, 0.9), np.zeros(1)
    with dg.Tape() as tape:
        for _ in range(3):
            P.nonlin_inplace[1, P.B](x, c)
        P.sq_loss[1, P.B](x, loss)
    copies = [weakref.ref(v.copy) for op in tape.operations for v in op.snaps]
    assert len(copies) == 4 and all(r() is not None for r in copies)
    tape.gradient(loss, wrt=[c])  # (its Items and arrays made too)
    gc.disable()
    try:
        del tape
        assert all(r() is None for r in copies)
    finally:
        gc.enable()


def test_a_dropped_device_tape_gives_its_chunks_back_at_once(counted):
    """On a GPU the same holds for the copies carved from the tape's chunks
    and for the chunk it carves from: nothing waits for the collector."""
    import gc
    import weakref

    S, n = counted
    arrs = _arrays(S)
    tape = _record(4, *arrs)
    tape.gradient(arrs[4], wrt=[arrs[3]])
    snaps = [v for op in tape.operations for v in op.snaps]
    assert len(snaps) == 2 + 3 * 3 + 1
    held = [weakref.ref(v.copy) for v in snaps] + [weakref.ref(v.array) for v in snaps]
    assert all(v.copy is tape.reg.arenas[0].chunk for v in snaps)  # one chunk, no object each
    assert all(r() is not None for r in held)
    gc.disable()
    try:
        del tape
        assert all(r() is None for r in held)
    finally:
        gc.enable()


def test_bfloat16_device_arrays_get_device_gradients(counted, monkeypatch):
    """bfloat16 device arrays (on a GPU: CuPy 14's, over a torch tensor's
    memory) in a tape: recorded with raw copies like any other dtype, and
    the reverse's dg.vjp rounds their float32 gradients on the device into
    arrays of the same kind (CuPy's, not torch tensors)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    S, n = counted
    monkeypatch.setattr(S, "astype", lambda self, dt, order="K": S(self._h.astype(dt, order=order)),
                        raising=False)
    rng = np.random.default_rng(4)
    bf = np.dtype(ml_dtypes.bfloat16)
    mk = lambda: S(rng.uniform(0.5, 1.0, N).astype(bf))  # noqa: E731
    x, v, f, k, loss = mk(), mk(), mk(), mk(), S(np.zeros(1, bf))
    tape = _record(3, x, v, f, k, loss)
    assert tape.stats["snapshots"] == 2 + 3 * 2 + 1 and n["memcpy"] == tape.stats["snapshots"]
    assert tape.stats["snapshot_bytes"] == (tape.stats["snapshots"] - 1) * N * 2 + 2
    gx, gk = tape.gradient(loss, wrt=[x, k])
    assert type(gx) is type(x) and gx.dtype == bf and gk.dtype == bf
    assert gx.shape == x.shape and gk.shape == k.shape


def test_the_gpu_fingerprint_sees_any_one_word_changed():
    """The hash the GPU's kernel computes (device.py; its numpy reference,
    which scripts/gpu_tape_check.py compares with the kernel on the GPU):
    any change of one 32-bit word, at any position, with any bits, changes
    it (the position weight is odd: invertible mod 2**64); so do changes of
    the tail bytes of a size not a multiple of 4, and a swap of two words."""
    from diffgpu.hostdiff.tape.device import reference

    rng = np.random.default_rng(9)
    for nbytes in (1, 3, 4, 20, 1027, 4 * 257):
        base = rng.integers(0, 256, nbytes, dtype=np.uint8)
        want = reference(base)
        assert reference(base.copy()) == want and want[2] == nbytes
        for at in range(nbytes):
            for delta in (1, 0x80, int(rng.integers(1, 256))):
                b = base.copy()
                b[at] ^= delta
                assert reference(b) != want, (nbytes, at, delta)
        if nbytes >= 8:
            w = base[: nbytes // 4 * 4].view(np.uint32).copy()
            i, j = 0, len(w) - 1
            if w[i] != w[j]:
                w[i], w[j] = w[j], w[i]
                swapped = np.concatenate([w.view(np.uint8), base[nbytes // 4 * 4:]])
                assert reference(swapped) != want


def _own_work(fn):
    """(Python bytecodes, Python calls) that `fn()` runs in diffgpu's own
    code (python/diffgpu/: the stand-in's and this test's not counted)."""
    import diffgpu
    from benchlib import count_work
    return list(count_work(fn, os.path.dirname(os.path.abspath(diffgpu.__file__))))


@pytest.mark.skipif(sys.version_info[:2] != (3, 11) or sys.implementation.name != "cpython",
                    reason="bytecodes are counted for CPython 3.11 (the repo's interpreter)")
def test_a_recorded_launch_runs_few_bytecodes_more_than_a_plain_one(counted):
    """What recording adds to a launch of a loop (spring: 1.5 copies, 1.5
    versions and 2.5 versions read per launch; heat's ping-pong of two
    buffers: 1 copy), counted in diffgpu's own bytecodes and calls per
    launch, the marginal launch of a loop (30 steps less 10) inside a tape
    whose plans exist, less the same loop outside: the hook (one call), the
    copies (one call each), no constructor call per Op or Version, no
    list of readers, no separate run of the kept Ready. Before (main at
    be87e8f): spring 314 bytecodes and 4.75 calls more than a plain launch,
    heat 243 and 3.9; after: 230 and 1.25, 174 and 0.9."""
    S, n = counted
    x, v, f, k, loss = _arrays(S)
    u, t = _arrays(S)[:2]
    g, dt, c = (N + P.B - 1) // P.B, np.float32(0.01), np.float32(0.25)

    def spring(count):
        for _ in range(count):
            P.spring_force[g, P.B](f, x, k)
            P.integrate[g, P.B](x, v, f, dt)

    def heat(count):
        for _ in range(count):
            P.lap_step[g, P.B](t, u, c)
            P.lap_step[g, P.B](u, t, c)

    def per_launch(loop):
        a, b = _own_work(lambda: loop(30)), _own_work(lambda: loop(10))
        return (a[0] - b[0]) / 40, (a[1] - b[1]) / 40

    for loop, most, copies in ((spring, 250, 1.5), (heat, 190, 1.0)):
        loop(2)  # programs and Readies made
        plain = per_launch(loop)
        with dg.Tape(check="end"):
            loop(3)  # the plans made, the kernels' latest keys kept
            before = n["memcpy"]
            recorded = per_launch(loop)
            assert (n["memcpy"] - before) / 80 == copies
        added = recorded[0] - plain[0], recorded[1] - plain[1]
        # the calls: the hook in place of run_keyed, one per copy (at most)
        assert added[1] <= copies, (loop.__name__, plain, recorded)
        assert added[0] <= most, (loop.__name__, plain, recorded)
