"""dg.Tape against hand-chained dg.vjp, JAX and PyTorch on two simulations.

    python bench/tape.py --cpu-smoke            # here: small sizes, numpy, checks + table
    python bench/tape.py --prepare DIR          # here: compile what --run needs for sm_90
    python bench/tape.py --run DIR              # on the GPU (numpy + CuPy, no MLIR)

Programs: `heat`, 64 steps of an explicit 3-point heat equation on 2^24
float32 points (ping-pong between two arrays), loss = sum(u * w); `spring`,
1000 steps of a chain of 2^14 masses and springs (force, then semi-implicit
Euler in place), loss = sum(x^2), in float64: its k gradient sums
products of position differences whose float32 rounding (positions up to
2^14) is larger than the gradient itself (a float32 numpy run of the same
reverse is off by 4x the gradient's magnitude), so no float32 result, ours or
a peer's, could be checked. Per program and way, the forward plus
reverse time (ms, median of rounds), the peak device memory in MB (CuPy's
pool: the most bytes in use during the call above those in use before it,
read after every allocation; JAX: XLA's memory analysis of the compiled
program, arguments + outputs + temporaries; torch:
`torch.cuda.max_memory_allocated` after a reset), and for the tape the host time per
recorded launch (the recording loop) and per operation of a captured graph.
Per program and way also the device operations per recorded operation
(kernels / copies / memsets of the forward and the reverse, from
tape.stats: `device_ops`), and for the captured graph its nodes (CUDA's
DOT dump of it, `graph_nodes`) and the host time of one `graph.launch()`
per recorded operation next to its device time per operation.

| way       | what runs                                                         |
|-----------|-------------------------------------------------------------------|
| tape      | `with dg.Tape()`, `tape.gradient`                                  |
| ckpt      | `dg.Tape(checkpoints=2*sqrt(T))` (T steps), `tape.gradient`        |
| graph     | `tape.capture(...)`, `graph.launch()` (forward and reverse replayed) |
| vjp       | the same launches with the states copied by hand, then one `dg.vjp` per launch |
| vjp/new   | heat only: a new array per step instead of ping-pong (nothing to copy) |
| jax       | `jax.jit(jax.grad(loss))` of the same update over `lax.scan`       |
| torch     | the same update in torch ops, `loss.backward()`                    |
| torch.compile | the same, each step a `torch.compile`d function (forward and backward graphs) |

Every gradient, diffgpu's and the peers', is checked against a float64 numpy
reverse of the same program (`numpy_reference`) before anything is timed.

`--prepare` runs every program with the tape on the CPU (at sizes with the
same types, geometry divisibility and launch facts), which caches the read/write
analyses and makes the same `dg.vjp` plans the GPU run will make, and
compiles for the chip every program those calls select: the forward
launches and the reverse recipes, generic and specialised for the launch
facts a GPU run of those arrays has (DIR/cache, DIFFGPU_CACHE_DIR of
--run). JAX and PyTorch rows are skipped where they are not installed.
"""
from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()
import diffgpu as dg  # noqa: E402

B = 256
SIZES = {"heat": (1 << 24, 64), "spring": (1 << 14, 1000)}
SMOKE = {"heat": (1 << 12, 16), "spring": (1 << 8, 100)}
#: --prepare's sizes: the same types, geometry divisibility and launch facts as
#: SIZES (every program key), less host time and memory
PREP = {"heat": (1 << 16, 4), "spring": (1 << 14, 4)}


# the programs' kernels, defined once (the tape tests run the same ones)
sys.path.insert(0, os.path.join(REPO, "test", "python", "tape"))
from tape_programs import dot_loss, integrate, lap_step, spring_force, sq_loss  # noqa: E402,F401
from tape_counts import ops_text, device_ops, graph_nodes  # noqa: E402


def grid(n):
    return (n + B - 1) // B


# -- the programs: inputs, the forward, the hand-chained reverse -----------------
def inputs(name, n, xp):
    rng = np.random.default_rng(0)
    if name == "heat":
        d = {"u0": rng.uniform(0, 1, n), "w": rng.uniform(-1, 1, n)}
        d = {k: xp.asarray(v.astype(np.float32)) for k, v in d.items()}
        d.update(u=xp.zeros(n, np.float32), t=xp.zeros(n, np.float32),
                 loss=xp.zeros(1, np.float32))
    else:
        d = {"x0": np.arange(n) * 1.0 + rng.uniform(0, 0.05, n), "k": rng.uniform(0.5, 1.5, n)}
        d = {k: xp.asarray(v.astype(np.float64)) for k, v in d.items()}
        d.update(x=xp.zeros(n, np.float64), v=xp.zeros(n, np.float64),
                 f=xp.zeros(n, np.float64), loss=xp.zeros(1, np.float64))
    return d


def forward(name, a, steps):
    """The program (its start set inside: dg.copy / dg.fill)."""
    g = grid((a["u0"] if name == "heat" else a["x0"]).shape[0])
    dg.fill(a["loss"], 0.0)
    if name == "heat":
        dg.copy(a["u"], a["u0"])
        for _ in range(steps // 2):
            lap_step[g, B](a["t"], a["u"], np.float32(0.25))
            lap_step[g, B](a["u"], a["t"], np.float32(0.25))
        dot_loss[g, B](a["u"], a["w"], a["loss"])
        return ["u0", "w"]
    dg.copy(a["x"], a["x0"])
    dg.fill(a["v"], 0.0)
    for _ in range(steps):
        spring_force[g, B](a["f"], a["x"], a["k"])
        integrate[g, B](a["x"], a["v"], a["f"], np.float64(0.01))
    sq_loss[g, B](a["x"], a["loss"])
    return ["x0", "k"]


def by_hand(name, a, steps, xp, fresh=False):
    """The same gradient with states kept by hand and one dg.vjp per launch:
    the same ping-pong program, each array copied before it is overwritten
    (`fresh`: a new array per step instead, nothing copied)."""
    n = a["u0"].shape[0] if name == "heat" else a["x0"].shape[0]
    g = grid(n)
    c, dt = np.float32(0.25), np.float64(0.01)
    one = xp.ones(1, np.float32 if name == "heat" else np.float64)
    if name == "heat":
        cur, nxt = xp.array(a["u0"], copy=True), xp.zeros(n, np.float32)
        states = []  # states[t]: what step t reads
        for t in range(steps):
            if fresh:
                nxt = xp.empty_like(cur)
            elif t >= 1:  # nxt is states[t - 1]: keep a copy before overwriting it
                states[t - 1] = xp.array(nxt, copy=True)
            states.append(cur)
            lap_step[g, B](nxt, cur, c)
            cur, nxt = nxt, cur
        loss = xp.zeros(1, np.float32)
        dot_loss[g, B](cur, a["w"], loss)
        r = dg.vjp(dot_loss[g, B], cur, a["w"], loss, cotangents={"loss": one})
        gu, gw = r["u"], r["w"]
        out = xp.empty_like(cur)  # dst: dg.vjp does not write it
        for t in range(steps - 1, -1, -1):
            gu = dg.vjp(lap_step[g, B], out, states[t], dg.Const(c),
                        cotangents={"dst": gu})["src"]
        return [gu, gw]
    x, v = xp.array(a["x0"], copy=True), xp.zeros(n, np.float64)
    f = xp.zeros(n, np.float64)
    saved = []  # per step x and v before it, f after the force: what the reverse reads
    for _ in range(steps):
        xs, vs = xp.array(x, copy=True), xp.array(v, copy=True)
        spring_force[g, B](f, x, a["k"])
        saved.append((xs, vs, xp.array(f, copy=True)))
        integrate[g, B](x, v, f, dt)
    loss = xp.zeros(1, np.float64)
    sq_loss[g, B](x, loss)
    gx = dg.vjp(sq_loss[g, B], x, loss, cotangents={"loss": one})["u"]
    gv = xp.zeros(n, np.float64)
    gk = xp.zeros(n, np.float64)
    for t in range(steps - 1, -1, -1):
        xs, vs, fs = saved[t]
        r = dg.vjp(integrate[g, B], xs, vs, fs, dg.Const(dt), cotangents={"x": gx, "v": gv})
        gx, gv, gf = r["x"], r["v"], r["f"]
        r = dg.vjp(spring_force[g, B], fs, xs, a["k"], cotangents={"f": gf})
        gx = gx + r["x"]
        gk += r["k"]
    return [gx, gk]


def taped(name, a, steps, **opts):
    with dg.Tape(**opts) as tape:
        wrt = forward(name, a, steps)
    return tape, [a[w] for w in wrt]


# -- the float64 numpy reference -----------------------------------------------------
def numpy_reference(name, a, steps, dtype=np.float64):
    """The gradients of `forward`'s loss, by a hand-written numpy reverse of
    the same update, in `dtype` (float64: the check every timed row passes
    first; float32: how far a float32 program is from it, the tolerance)."""
    h = {k: np.asarray(v.get() if hasattr(v, "get") else v, dtype) for k, v in a.items()}
    c, dt = dtype(0.25), dtype(0.01)
    if name == "heat":
        u = h["u0"].copy()
        for _ in range(steps):
            u[1:-1] = u[1:-1] + c * (u[:-2] - 2 * u[1:-1] + u[2:])
        g = h["w"].copy()
        for _ in range(steps):  # the transposed step: ends held, interior 1 - 2c, c beside
            t = g.copy()
            t[1:-1] *= 1 - 2 * c
            t[:-2] += c * g[1:-1]  # S[j + 1, j] = c for interior j + 1
            t[2:] += c * g[1:-1]   # S[j - 1, j] = c for interior j - 1
            g = t
        return [g, u]
    k, x, v = h["k"], h["x0"].copy(), np.zeros_like(h["x0"])
    xs = []
    for _ in range(steps):
        xs.append(x.copy())
        t = k[:-1] * (x[1:] - x[:-1] - 1.0)
        f = np.zeros_like(x)
        f[:-1] += t
        f[1:] -= t
        v = v + dt * f
        x = x + dt * v
    gx, gv, gk = 2 * x, np.zeros_like(x), np.zeros_like(x)
    for s in range(steps - 1, -1, -1):
        x = xs[s]
        gv = gv + dt * gx          # x' = x + dt v'
        gf = dt * gv               # v' = v + dt f
        gt = gf[:-1] - gf[1:]      # f = t (at i) - t (at i + 1)
        gk[:-1] += gt * (x[1:] - x[:-1] - 1.0)
        gx[1:] += gt * k[:-1]
        gx[:-1] -= gt * k[:-1]
    return [gx, gk]


def reference(name, a, steps):
    """(float64 gradients, per-gradient tolerance): 4x the distance of the
    same numpy reverse run in the program's float type from float64, at
    least 2e-3 (float32) or 1e-9 (float64) of the largest magnitude."""
    r64 = numpy_reference(name, a, steps)
    r32 = numpy_reference(name, a, steps, np.float32 if name == "heat" else np.float64)
    rel = 2e-3 if name == "heat" else 1e-9
    return r64, [max(4 * float(np.abs(p - q).max()), rel * float(np.abs(q).max()))
                 for p, q in zip(r32, r64)]


def check_reference(who, got, ref):
    """`got` (any array library) against `reference`'s (gradients, tolerances)."""
    for g, r, tol in zip(got, *ref):
        g = np.asarray(g.get() if hasattr(g, "get") else
                       (g.detach().cpu().numpy() if hasattr(g, "detach") else g), np.float64)
        err = float(np.abs(g - r).max())
        if not err <= tol:
            raise AssertionError(f"{who}: gradient differs from float64 numpy by {err:.3g} "
                                 f"(tolerance {tol:.3g}, largest {float(np.abs(r).max()):.3g})")


# -- CPU smoke ------------------------------------------------------------------------
def cpu_smoke() -> int:
    rows = []
    for name, (n, steps) in SMOKE.items():
        for opts in ({}, {"checkpoints": 3}):  # compile and plan once, untimed
            w = inputs(name, n, np)
            t, ws = taped(name, w, steps, **opts)
            t.gradient(w["loss"], wrt=ws)
        by_hand(name, inputs(name, n, np), steps, np)
        a = inputs(name, n, np)
        t0 = time.perf_counter()
        tape, wrt = taped(name, a, steps)
        t1 = time.perf_counter()
        ref = tape.gradient(a["loss"], wrt=wrt)
        t2 = time.perf_counter()
        check_reference(f"{name} tape", ref, reference(name, inputs(name, n, np), steps))
        T = len(tape.operations)
        k = max(2, int(2 * math.sqrt(steps)))  # 2 sqrt(T) states for T steps
        b = inputs(name, n, np)
        ct, cw = taped(name, b, steps, checkpoints=k)
        t3 = time.perf_counter()
        cg = ct.gradient(b["loss"], wrt=cw)
        t4 = time.perf_counter()
        assert all(np.array_equal(p, q) for p, q in zip(cg, ref)), f"{name}: checkpointed differs"
        graph = tape.capture(a["loss"], wrt=wrt)
        before = dict(tape.stats)
        graph.launch()  # forward and reverse once more: the same calls a GPU graph holds
        t7 = time.perf_counter()
        got = graph.launch()
        t8 = time.perf_counter()
        assert all(np.array_equal(p, q) for p, q in zip(got, ref)), f"{name}: graph differs"
        once = {k: (tape.stats[k] - before[k]) / 2 for k in ("vjps", "adds", "zeros", "copies")}
        c = inputs(name, n, np)
        t5 = time.perf_counter()
        hand = by_hand(name, c, steps, np)
        t6 = time.perf_counter()
        for p, q in zip(hand + by_hand(name, inputs(name, n, np), steps, np, fresh=True), ref * 2):
            np.testing.assert_allclose(p, q, rtol=2e-4, atol=1e-5 * float(np.abs(q).max()))
        rows.append((name, T, (t2 - t0) * 1e3, (t4 - t3) * 1e3, (t6 - t5) * 1e3,
                     (t1 - t0) / T * 1e6, tape.stats["snapshot_bytes"] / 1e6,
                     ct.stats["peak_states"] * ct.stats["state_bytes"] / 1e6, k,
                     ct.stats["recomputed"], ops_text(device_ops(tape, once), T),
                     ops_text(device_ops(ct), T), (t8 - t7) / T * 1e6))
    print("CPU smoke (numpy, the kernels run; wall time on a loaded machine: indicative)")
    print(f"{'program':8} {'ops':>5} {'tape F+B ms':>12} {'ckpt F+B ms':>12} {'vjp F+B ms':>11} "
          f"{'us/rec.op':>10} {'tape MB':>8} {'ckpt MB':>8} {'k':>4} {'recomp':>7}")
    for r in rows:
        print(f"{r[0]:8} {r[1]:5d} {r[2]:12.1f} {r[3]:12.1f} {r[4]:11.1f} {r[5]:10.1f} "
              f"{r[6]:8.2f} {r[7]:8.2f} {r[8]:4d} {r[9]:7d}")
    print("device operations per recorded op, kernels/copies/memsets (forward + reverse, "
          "tape.stats); graph.launch() host time per recorded op (here: the calls themselves)")
    print(f"{'program':8} {'tape (= graph)':>16} {'ckpt':>16} {'graph us/op':>12}")
    for r in rows:
        print(f"{r[0]:8} {r[10]:>16} {r[11]:>16} {r[12]:12.1f}")
    print("checks: tape == float64 numpy, checkpointed == tape bitwise, graph == tape bitwise, "
          "hand-chained dg.vjp == tape (rtol 2e-4)")
    return 0


# -- prepare (here) ------------------------------------------------------------------
def compile_programs(run, chip: str) -> int:
    """Run `run()` on the CPU and compile for `chip` every program its
    launches and dg.vjp / dg.autodiff calls select: generic, and with the
    launch facts of the same arrays on a GPU (the host's facts drop the
    GPU-only ones: the full facts are taken where they are computed)."""
    import diffgpu.driver.launch as L
    from diffgpu.runtime import specialize

    full, seen = {}, []
    real_ft, real_get = specialize.Facts.for_target, L.get_program

    def for_target(self, target):
        out = real_ft(self, target)
        full[id(out)] = (out, self)
        return out

    def get_program(defn, types, target, diff=None, facts=None):
        whole = full.get(id(facts), (None, None))[1] if facts is not None else None
        seen.append((defn, tuple(types), diff, whole))
        return real_get(defn, types, target, diff, facts)
    specialize.Facts.for_target, L.get_program = for_target, get_program
    try:
        run()
    finally:
        specialize.Facts.for_target, L.get_program = real_ft, real_get
    done = set()
    for defn, types, diff, whole in seen:
        for facts in (None, None if whole is None else whole.for_target(chip)):
            key = (id(defn), types, diff, None if facts is None else facts.key())
            if key not in done:
                done.add(key)
                real_get(defn, types, chip, diff, facts)
    return len(done)


def prepare(path: str, chip: str = "sm_90") -> None:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")

    def run():
        for name, (n, steps) in PREP.items():
            for opts in ({}, {"checkpoints": 2}):
                a = inputs(name, n, np)
                tape, wrt = taped(name, a, steps, **opts)
                tape.gradient(a["loss"], wrt=wrt)
            by_hand(name, inputs(name, n, np), steps, np)
    count = compile_programs(run, chip)
    print(f"prepared {count} programs for {chip} in {path} ({', '.join(SIZES)})")


# -- run (the GPU) -----------------------------------------------------------------------
def _wall_ms(fn, sync, rounds=5):
    fn()
    sync()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def _peak_cupy(cp, fn):
    """MB in use through CuPy's pool at its highest while `fn()` runs, above
    what was in use before: every allocation (arrays, the tape's copies:
    `cupy.cuda.alloc`) goes through an allocator that reads the pool's bytes
    in use after it. (The pool's total after `fn` is no peak: a block freed
    inside a chunk still in use is served again without growing it.)"""
    pool = cp.get_default_memory_pool()
    cp.cuda.runtime.deviceSynchronize()
    pool.free_all_blocks()
    base = pool.used_bytes()
    peak = [base]

    def malloc(n):
        mem = pool.malloc(n)
        peak[0] = max(peak[0], pool.used_bytes())
        return mem

    cp.cuda.set_allocator(malloc)
    try:
        fn()
        cp.cuda.runtime.deviceSynchronize()
    finally:
        cp.cuda.set_allocator(pool.malloc)
    return (peak[0] - base) / 1e6


def run(path: str) -> int:
    sys.modules["mlir"] = None  # the GPU machine has no MLIR: prove it
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(path), "cache")
    import cupy as cp

    from diffgpu.driver.launch import STATS
    sync = cp.cuda.runtime.deviceSynchronize
    rows = []
    for name, (n, steps) in SIZES.items():
        pristine = inputs(name, n, cp)  # made once: numpy's generator is not timed

        def fresh():  # a new set of the program's arrays: device copies (as torch's clones)
            return {k: cp.array(v, copy=True) for k, v in pristine.items()}
        a = fresh()
        tape, wrt = taped(name, a, steps)
        ref = [cp.asnumpy(g) for g in tape.gradient(a["loss"], wrt=wrt)]
        ref64 = reference(name, inputs(name, n, np), steps)
        check_reference(f"{name} tape", ref, ref64)
        T = len(tape.operations)
        k = max(2, int(2 * math.sqrt(steps)))  # 2 sqrt(T) states for T steps

        def tape_fb(**opts):
            b = fresh()
            t, w = taped(name, b, steps, **opts)
            return t.gradient(b["loss"], wrt=w), t
        got, _ = tape_fb(checkpoints=k)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(cp.asnumpy(g), r, rtol=1e-4, atol=1e-6 * np.abs(r).max())
        hand = by_hand(name, fresh(), steps, cp)
        for g, r in zip(hand, ref):
            np.testing.assert_allclose(cp.asnumpy(g), r, rtol=1e-3, atol=1e-5 * np.abs(r).max())
        row = {"tape": (_wall_ms(lambda: tape_fb(), sync), _peak_cupy(cp, lambda: tape_fb())),
               "ckpt": (_wall_ms(lambda: tape_fb(checkpoints=k), sync),
                        _peak_cupy(cp, lambda: tape_fb(checkpoints=k))),
               "vjp": (_wall_ms(lambda: by_hand(name, fresh(), steps, cp), sync),
                       _peak_cupy(cp, lambda: by_hand(name, fresh(), steps, cp)))}
        if name == "heat":  # the same gradient from a program that never overwrites
            hand_new = lambda: by_hand(name, fresh(), steps, cp, fresh=True)  # noqa
            row["vjp/new"] = (_wall_ms(hand_new, sync), _peak_cupy(cp, hand_new))
        graph = tape.capture(a["loss"], wrt=wrt)
        before = dict(tape.stats)
        for g, r in zip(graph.launch(), ref):  # eager, then captured: checked first
            graph.synchronize()
            np.testing.assert_allclose(cp.asnumpy(g), r, rtol=1e-4, atol=1e-6 * np.abs(r).max())
        once = {k: (tape.stats[k] - before[k]) / 2 for k in ("vjps", "adds", "zeros", "copies")}
        row["graph"] = (_wall_ms(graph.launch, sync), float("nan"))
        host = []
        for _ in range(5):  # the host's part of a launch: one graph launch, no wait
            sync()
            t0 = time.perf_counter()
            graph.launch()
            host.append((time.perf_counter() - t0) * 1e6 / T)
            sync()
        ops = {"tape": ops_text(device_ops(tape, once), T),
               "ckpt": ops_text(device_ops(tape_fb(checkpoints=k)[1]), T),
               "graph": ops_text(device_ops(tape, once), T)}
        nodes = graph_nodes(graph)
        b = fresh()
        with dg.Tape():  # these arrays' roles looked up once
            forward(name, b, steps)
        sync()
        t0 = time.perf_counter()
        with dg.Tape():
            forward(name, b, steps)
        sync()
        rec_us = (time.perf_counter() - t0) / T * 1e6
        t0 = time.perf_counter()
        forward(name, b, steps)
        plain_us = (time.perf_counter() - t0) / T * 1e6
        sync()
        graph_us = row["graph"][0] * 1e3 / (2 * T)
        row.update(peers(name, n, steps, ref64))
        rows.append((name, T, row, rec_us, plain_us, graph_us, k, ops, nodes,
                     sorted(host)[len(host) // 2]))
    print("H200, wall ms of forward + reverse (median), peak device MB; device operations "
          "per recorded op (kernels/copies/memsets, forward + reverse, from tape.stats)")
    for name, T, row, rec_us, plain_us, graph_us, k, ops, nodes, host_us in rows:
        print(f"\n{name}: {T} operations, checkpoints={k}")
        print(f"  {'way':9} {'F+B ms':>9} {'peak MB':>9} {'vs vjp':>7} {'ops/rec.op k/c/m':>18}")
        for way, (ms, mb) in row.items():
            rel = ms / row["vjp"][0] if row["vjp"][0] else float("nan")
            print(f"  {way:9} {ms:9.2f} {mb:9.1f} {rel:7.2f} {ops.get(way, ''):>18}")
        print(f"  host per recorded launch: {rec_us:.1f} us (plain launch {plain_us:.1f} us); "
              f"per operation of the captured graph (F+B): {graph_us:.2f} us")
        print(f"  captured graph per recorded op: device {row['graph'][0] * 1e3 / T:.2f} us, "
              f"host (graph.launch()) {host_us:.3f} us; nodes per recorded op "
              + (", ".join(f"{v / T:.2f} {n}" for n, v in nodes.items()) if nodes is not None
                 else "n/a (no debug_dot_str)"))
    print(f"\nprograms: {STATS['disk_hit']} from the cache, {STATS['compile']} compiled, "
          f"{STATS['generic_fallback']} generic fallbacks")
    return 0


def peers(name, n, steps, ref64) -> dict:
    """JAX and PyTorch rows, where installed with a GPU, each checked
    against the float64 reference first."""
    out = {}
    try:
        import jax
        import jax.numpy as jnp
        if jax.default_backend() == "gpu":
            out["jax"] = _jax(jax, jnp, name, n, steps, ref64)
        else:
            print(f"  ({name}: no JAX row: JAX runs on {jax.default_backend()}, not a GPU)")
    except Exception as e:  # not installed, no GPU backend
        print(f"  ({name}: no JAX row: {type(e).__name__}: {e})")
    try:
        import torch
        if torch.cuda.is_available():
            out["torch"] = _torch(torch, name, n, steps, ref64)
            out["t.compile"] = _torch(torch, name, n, steps, ref64, compiled=True)
    except Exception as e:
        print(f"  ({name}: no PyTorch row: {type(e).__name__}: {e})")
    return out


def _jax(jax, jnp, name, n, steps, ref64):
    jax.config.update("jax_enable_x64", True)  # the spring is float64 (heat's arrays stay float32)
    a = {k: jnp.asarray(np.asarray(v.get() if hasattr(v, "get") else v))
         for k, v in inputs(name, n, np).items()}

    if name == "heat":
        def step(u, _):
            mid = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
            return u.at[1:-1].set(mid), None

        def loss(u0, w):
            u, _ = jax.lax.scan(step, u0, None, length=steps)
            return jnp.sum(u * w)
        f = jax.jit(jax.grad(loss, argnums=(0, 1)))
        args = (a["u0"], a["w"])
    else:
        def step(s, _):
            x, v, k = s
            d = x[1:] - x[:-1] - 1.0
            t = k[:-1] * d
            force = jnp.zeros_like(x).at[:-1].add(t).at[1:].add(-t)
            v = v + 0.01 * force
            return (x + 0.01 * v, v, k), None

        def loss(x0, k):
            (x, _, _), _ = jax.lax.scan(step, (x0, jnp.zeros_like(x0), k), None, length=steps)
            return jnp.sum(x * x)
        f = jax.jit(jax.grad(loss, argnums=(0, 1)))
        args = (a["x0"], a["k"])
    check_reference(f"{name} jax", [np.asarray(g) for g in f(*args)], ref64)
    ms = _wall_ms(lambda: jax.block_until_ready(f(*args)), lambda: None)
    # XLA's own account of the compiled program (JAX cannot reset its
    # process-wide peak_bytes_in_use, which stays at the first program's)
    mem = f.lower(*args).compile().memory_analysis()
    if mem is None:
        return ms, float("nan")
    return ms, (mem.argument_size_in_bytes + mem.output_size_in_bytes
                + mem.temp_size_in_bytes - mem.alias_size_in_bytes) / 1e6


def _torch(torch, name, n, steps, ref64, compiled=False):
    """PyTorch autograd over the same update; `compiled`: each step a
    torch.compile'd function (its forward and backward graphs compiled once)."""
    a = {k: torch.as_tensor(np.asarray(v), device="cuda") for k, v in inputs(name, n, np).items()}

    def heat_step(u):
        mid = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
        return torch.cat([u[:1], mid, u[-1:]])

    def spring_step(x, v, k):
        t = k[:-1] * (x[1:] - x[:-1] - 1.0)
        force = torch.nn.functional.pad(t, (0, 1)) - torch.nn.functional.pad(t, (1, 0))
        v = v + 0.01 * force
        return x + 0.01 * v, v
    if compiled:
        heat_step, spring_step = torch.compile(heat_step), torch.compile(spring_step)

    def fb():
        if name == "heat":
            u0 = a["u0"].clone().requires_grad_(True)
            w = a["w"].clone().requires_grad_(True)
            u = u0
            for _ in range(steps):
                u = heat_step(u)
            loss = (u * w).sum()
            loss.backward()
            return u0.grad, w.grad
        x0 = a["x0"].clone().requires_grad_(True)
        k = a["k"].clone().requires_grad_(True)
        x, v = x0, torch.zeros_like(x0)
        for _ in range(steps):
            x, v = spring_step(x, v, k)
        (x * x).sum().backward()
        return x0.grad, k.grad
    sync = torch.cuda.synchronize
    check_reference(f"{name} torch{'.compile' if compiled else ''}", fb(), ref64)
    ms = _wall_ms(fb, sync, rounds=3)
    torch.cuda.reset_peak_memory_stats()
    fb()
    sync()
    return ms, torch.cuda.max_memory_allocated() / 1e6


def main(argv=None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from benchlib import prepare_run
    return prepare_run(__doc__, prepare, run, argv, cpu_smoke=cpu_smoke)


if __name__ == "__main__":
    sys.exit(main())
