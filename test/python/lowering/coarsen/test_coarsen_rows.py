"""The rows coarsening of dg.vjp's reverse program (lowering/coarsen/rows.py):
the coarsened program against the uncoarsened one and float64 finite
differences on the CPU, for row counts that are and are not multiples of R;
the kernels that must keep a block per row; the launch fact and R's rule;
the sm_90 PTX of layernorm_fast's coarsened reverse at 65536 rows (8
atomics per thread and block, after the row loop; dX stored with plain
stores; the loop kept, not unrolled); the next row's loads issued an
iteration ahead (lowering/coarsen/prefetch.py) and where they are not."""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_rows_coarsen as C
import kernels_rows_fast as K
import kernels_rows_params as P
from diffgpu.runtime import specialize as S


@pytest.fixture
def few_blocks(monkeypatch):
    """R's rule for small launches: at least 2 blocks left (not 2 waves of
    an H200), so that a few rows are coarsened. Yields the list of the
    reverse programs dg.vjp picks (their payloads), in order."""
    from diffgpu.driver import launch as L
    monkeypatch.setattr(S, "ROW_BLOCKS", 2)
    S._SHAPED.clear()  # facts of a layout are memoised
    for kernel in (K.layernorm_fast, K.softmax_fast, C.scale_rows, C.scale_rows_block_id,
                   C.scale_next_row, C.scale_rows_ticket, C.shift_rows_shared,
                   C.scale_rows_masked):
        _forget(kernel)  # plans kept by earlier tests hold the programs they chose
    picked = []
    get = L.get_program

    def spy(defn, types, target, diff=None, facts=None):
        prog = get(defn, types, target, diff, facts)
        if diff is not None and diff[0] == "reverse":
            picked.append(prog.payload)
        return prog
    monkeypatch.setattr(L, "get_program", spy)
    yield picked
    S._SHAPED.clear()


@pytest.fixture
def sm90_programs():
    """The sm_90 programs these tests compile (compile_only) dropped after
    them: other tests look their kernels' sm_90 programs up one by one."""
    yield
    for kernel in (K.layernorm_fast, K.softmax_fast, C.scale_rows, C.shift_rows_shared):
        for key in [k for k in kernel._programs if k[1] == "sm_90"]:
            del kernel._programs[key]
        _forget(kernel)


def _forget(kernel):
    """`kernel`'s kept vjp plans and launches dropped (they hold the
    program they chose)."""
    for kept in ("_plans", "_moved", "_fast"):
        kernel.__dict__.pop(kept, None)


def _off(monkeypatch, kernel):
    """The coarsening off (DIFFGPU_ROWS=1) for `kernel`'s next launches."""
    monkeypatch.setattr(S, "ROWS_OVERRIDE", 1)
    S._SHAPED.clear()
    _forget(kernel)


def _reverse_payloads(kernel):
    return [p.payload for k, p in kernel._programs.items() if k[2] and k[2][0] == "reverse"]


def _rows_of(picked):
    """The "rows" of the picked reverse programs, in order."""
    return [tuple(p.get("rows") or ()) for p in picked]


def test_rows_factor_rule(monkeypatch):
    """The largest power of two <= 64 and <= the rows leaving ROW_BLOCKS
    blocks (two waves of an H200's 132 SMs x 8 blocks); DIFFGPU_ROWS
    overrides it."""
    assert S.ROW_BLOCKS == 2 * 132 * 8
    assert [S.rows_factor(n) for n in (1, 2111, 4224, 8448, 65536, 2 ** 20)] == [1, 1, 2, 4, 16,
                                                                                 64]
    monkeypatch.setattr(S, "ROWS_OVERRIDE", 8)
    assert (S.rows_factor(65536), S.rows_factor(5)) == (8, 1)
    monkeypatch.setattr(S, "ROWS_OVERRIDE", 0)
    monkeypatch.setattr(S, "ROW_BLOCKS", 2)
    assert [S.rows_factor(n) for n in (1, 2, 3, 8, 10, 200)] == [1, 1, 2, 4, 8, 64]


def test_rows_fact_and_its_key(few_blocks):
    """A block y extent of 1 and a grid y of G: rows = (R, G % R), in the
    key; none for block y > 1 or G = 1."""
    x = np.zeros((10, 32))
    f = S.facts_of([(x.ctypes.data, x.shape, None, 8, True)], (1, 10, 1), (32, 1, 1))
    assert f.rows == (8, 2) and "rows=8,2" in f.key()
    assert f.for_target("host").rows == (8, 2)
    f = S.facts_of([(x.ctypes.data, x.shape, None, 8, True)], (1, 10, 1), (32, 2, 1))
    assert f.rows == ()
    f = S.facts_of([(x.ctypes.data, x.shape, None, 8, True)], (1, 1, 1), (32, 1, 1))
    assert f.rows == ()


def _ln_data(dt, rows, seed=0):
    rs = np.random.RandomState(seed)
    return (rs.randn(rows, K.COLS).astype(dt), (rs.rand(K.COLS) + 0.5).astype(dt),
            rs.rand(K.COLS).astype(dt), rs.randn(rows, K.COLS).astype(dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("rows,want", [(8, (4, 0)), (10, (8, 2)), (3, (2, 1))])
def test_layernorm_vjp_coarsened_equals_uncoarsened(dt, rows, want, few_blocks, monkeypatch):
    """layernorm_fast's dg.vjp with R rows per block (a remainder in the
    last block when R does not divide the rows) against the same vjp with
    the coarsening off and against the analytic gradients."""
    X, g, b, dY = _ln_data(dt, rows)
    launch = K.layernorm_fast[K.fast_launch(rows)]
    G = dg.vjp(launch, np.zeros_like(X), X, g, b, cotangents={"Y": dY})
    assert _rows_of(few_blocks)[-1] == want
    _off(monkeypatch, K.layernorm_fast)
    H = dg.vjp(launch, np.zeros_like(X), X, g, b, cotangents={"Y": dY})
    assert _rows_of(few_blocks)[-1] == ()
    tol = 1e-12 if dt == np.float64 else 2e-5
    for name in ("X", "g", "b"):
        np.testing.assert_allclose(G[name], H[name], atol=tol * 10, rtol=tol)
    dX, dg_, db = P.layernorm_vjp(X, g, b, dY)
    tol = 1e-10 if dt == np.float64 else 6e-4
    np.testing.assert_allclose(G["X"], dX, atol=tol, rtol=tol)
    np.testing.assert_allclose(G["g"], dg_, atol=tol * 10, rtol=tol)
    np.testing.assert_allclose(G["b"], db, atol=tol * 10, rtol=tol)


@pytest.mark.parametrize("rows", [8, 10])
def test_softmax_vjp_is_not_coarsened(rows, few_blocks, monkeypatch):
    """softmax_fast has no parameter: its reverse adds nothing shared, so
    it keeps a block per row (the remark says why) and equals the program
    with the coarsening off."""
    X = np.random.RandomState(1).randn(rows, K.COLS)
    dY = np.random.RandomState(2).randn(rows, K.COLS)
    launch = K.softmax_fast[K.fast_launch(rows)]
    G = dg.vjp(launch, np.zeros_like(X), X, cotangents={"Y": dY})
    payload = few_blocks[-1]
    assert "rows=" in payload["facts"]
    assert "rows" not in payload
    assert any("coarsen-rows [missed]" in r and "no add at an index independent of gid(1)" in r
               for r in payload["remarks"])
    _off(monkeypatch, K.softmax_fast)
    H = dg.vjp(launch, np.zeros_like(X), X, cotangents={"Y": dY})
    assert "rows=" not in few_blocks[-1]["facts"]
    np.testing.assert_allclose(G["X"], H["X"], atol=1e-13)
    S_ = K.softmax_ref(X)
    np.testing.assert_allclose(G["X"], S_ * (dY - (S_ * dY).sum(1, keepdims=True)), atol=1e-12)


def test_layernorm_vjp_finite_differences(few_blocks):
    """float64 central differences of sum(Y * dY) against the coarsened
    dg.vjp (3 rows: R = 2, the last block 1 row), at sampled elements of X,
    g and b."""
    X, g, b, dY = _ln_data(np.float64, 3, seed=3)
    launch = K.layernorm_fast[K.fast_launch(3)]
    G = dg.vjp(launch, np.zeros_like(X), X, g, b, cotangents={"Y": dY})
    assert _rows_of(few_blocks)[-1] == (2, 1)

    def loss(X, g, b):
        Y = np.zeros_like(X)
        launch(Y, X, g, b)
        return float((Y * dY).sum())
    rs, eps = np.random.RandomState(5), 1e-6
    for name, arr in (("X", X), ("g", g), ("b", b)):
        for flat in rs.choice(arr.size, 6, replace=False):
            at = np.unravel_index(flat, arr.shape)
            hi, lo = arr.copy(), arr.copy()
            hi[at] += eps
            lo[at] -= eps
            args = {"X": X, "g": g, "b": b}
            num = (loss(**{**args, name: hi}) - loss(**{**args, name: lo})) / (2 * eps)
            assert abs(G[name][at] - num) <= 1e-6 * max(1.0, abs(num)), (name, at)


def test_gradcheck_duplicated_keeps_the_stencil_gather(few_blocks):
    """dg.gradcheck (every argument Duplicated): dX's adds become the
    per-block gather of diffgpu-stencil-adjoint first (it runs before the
    rows coarsening), in the kernel around its call of the reverse, so the
    reverse keeps a block per row; the gradients pass."""
    X, g, b, _ = _ln_data(np.float64, 3, seed=3)
    Y = np.zeros_like(X)
    assert dg.gradcheck(K.layernorm_fast[K.fast_launch(3)],
                        dg.Duplicated(Y, np.zeros_like(Y)), dg.Duplicated(X, np.zeros_like(X)),
                        dg.Duplicated(g, np.zeros_like(g)), dg.Duplicated(b, np.zeros_like(b)))
    payload = few_blocks[-1]
    assert "rows" not in payload and any(
        "coarsen-rows [missed]" in r and "calls a function" in r for r in payload["remarks"])


def test_primal_programs_take_no_rows_fact(few_blocks):
    """The fact is for reverse programs: a plain launch's program key has no
    rows (no copy per R)."""
    X, g, b, _ = _ln_data(np.float64, 10)
    K.layernorm_fast[K.fast_launch(10)](np.zeros_like(X), X, g, b)
    keys = [k for k in K.layernorm_fast._programs if not k[2]]
    assert keys and not any("rows=" in str(k) for k in keys)


def _vjp_scale(kernel, rows, extra=()):
    rs = np.random.RandomState(4)
    X, g, dY = rs.randn(rows, C.COLS), rs.randn(C.COLS), rs.randn(rows, C.COLS)
    G = dg.vjp(kernel[C.launch(rows)], np.zeros_like(X), X, g, *extra, cotangents={"Y": dY})
    return X, g, dY, G


@pytest.mark.parametrize("rows", [8, 10, 3])
def test_eligible_row_kernel(rows, few_blocks):
    """scale_rows: dg = sum over rows of dY * X, dX = dY * g."""
    X, g, dY, G = _vjp_scale(C.scale_rows, rows)
    assert _rows_of(few_blocks)[-1] == (S.rows_factor(rows), rows % S.rows_factor(rows))
    np.testing.assert_allclose(G["g"], (dY * X).sum(0), atol=1e-12)
    np.testing.assert_allclose(G["X"], dY * g, atol=1e-12)


@pytest.mark.parametrize("kernel,reason", [
    (C.scale_rows_block_id, "it reads block_id(1) outside gid(1)"),
    (C.scale_next_row, "it reads grid_dim(1)"),
    (C.scale_rows_ticket, "an atomic add's result is used"),
])
def test_kernels_that_keep_a_block_per_row(kernel, reason, few_blocks):
    """Refused, with the reason in the remarks; the gradients stay right."""
    rows = 10
    extra = (np.zeros(1, np.int64),) if kernel is C.scale_rows_ticket else ()
    X, g, dY, G = _vjp_scale(kernel, rows, extra)
    payload = few_blocks[-1]
    assert "rows=8,2" in payload["facts"] and "rows" not in payload
    assert any("coarsen-rows [missed]" in r and reason in r for r in payload["remarks"])
    Xs = np.roll(X, -1, axis=0) if kernel is C.scale_next_row else X
    np.testing.assert_allclose(G["g"], (dY * Xs).sum(0), atol=1e-12)
    if kernel is C.scale_next_row:
        np.testing.assert_allclose(G["X"], np.roll(dY, 1, axis=0) * g, atol=1e-12)
    else:
        np.testing.assert_allclose(G["X"], dY * g, atol=1e-12)


def test_race_checked_program_keeps_its_blocks(few_blocks, monkeypatch):
    """The race checker checks the program as launched: not coarsened."""
    monkeypatch.setenv("DIFFGPU_RACECHECK", "1")
    from diffgpu.runtime import racecheck
    if not racecheck.enabled():
        pytest.skip("the race check is not switched by DIFFGPU_RACECHECK here")
    X, g, dY, G = _vjp_scale(C.scale_rows, 10)
    assert _rows_of(few_blocks)[-1] == ()
    np.testing.assert_allclose(G["g"], (dY * X).sum(0), atol=1e-12)


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


def test_sm90_coarsened_layernorm_reverse(monkeypatch, tmp_path, sm90_programs):
    """65536 rows (bench/peers.py's layernorm at 2^26): R = 16 by the rule;
    the grid (1, 65536) that needed a fold runs as (1, 4096) without one;
    the PTX adds into dg and db 8 times per thread (4 columns each), after
    the loop, so once per block of 16 rows instead of once per row; dX is
    4 plain st.global; no local memory; the loop stays a loop (the
    uncoarsened program's size plus the first row's loads before the loop,
    not 16 copies); X and dY are loaded an iteration ahead (prefetch.py):
    8 loads before the loop, 8 for the next row at the top of its body
    ahead of the first barrier, and g's 4 (loop-invariant) in it; 4
    barriers, one per block collective of a row (an even number: the warp
    slots alternate across the back edge, no barrier closes the row)."""
    from diffgpu.interop import compile_only
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    n = 65536
    X = np.zeros((n, K.COLS), np.float32)  # never written: no pages touched
    v = np.ones(K.COLS, np.float32)
    ptxs = {}
    for rows in (0, 1):
        monkeypatch.setattr(S, "ROWS_OVERRIDE", rows)
        S._SHAPED.clear()
        K.layernorm_fast._programs.clear()
        with compile_only("sm_90"):
            dg.vjp(K.layernorm_fast[K.fast_launch(n)], np.zeros_like(X), X, v, v.copy(),
                   cotangents={"Y": X})
        (p,) = [p for p in _reverse_payloads(K.layernorm_fast)]
        ptxs[rows] = p
    S._SHAPED.clear()
    on, off = ptxs[0], ptxs[1]
    assert on["rows"] == [16, 0] and "grid_fold" not in on
    assert "rows" not in off and off["grid_fold"] == [n, 1]
    ptx = on["ptx"]
    assert _count(ptx, r"\batom\.global\.add\.f32") == 8
    assert _count(ptx, r"\bst\.global") == 4 and _count(ptx, r"\bst\.[bfsu]\d") == 0
    assert _count(ptx, r"\.local\b") == 0
    lines = len(ptx.splitlines())
    assert lines < 1.5 * len(off["ptx"].splitlines())
    loads = [m.start() for m in re.finditer(r"\bld\.global\.nc\.b32", ptx)]
    bars = [m.start() for m in re.finditer(r"\bbar\.sync", ptx)]
    top = [m.start() for m in re.finditer(r"^\$L__BB0_\d+:$", ptx, re.M)]
    assert len(loads) == 20 and len(bars) == 4  # one per block collective, none closing a row
    head = [x for x in top if x > loads[7]][0]  # the first label after the prologue's loads
    assert sum(head < x < bars[0] for x in loads) == 8
    # the 8 atomics come after the row loop's back edge (a compare with 16)
    back = [m.start() for m in re.finditer(r"setp\.ne\.b32\s+%p\d+, %r\d+, 16;", ptx)]
    atoms = [m.start() for m in re.finditer(r"\batom\.global\.add\.f32", ptx)]
    assert back and min(atoms) > max(back)
    # the runtime launches ceil(65536 / 16) blocks in y, no fold
    from diffgpu.driver.launch import Program
    prog = Program.__new__(Program)
    prog.coarsen, prog.grid_fold, prog.rows, prog.entry = 1, (), (16, 0), on["entry"]
    from diffgpu.runtime.fastpath import gpu_grid
    assert gpu_grid(prog, (1, n, 1)) == (1, n // 16, 1)
    prog.rows = (16, 3)
    assert gpu_grid(prog, (1, 35, 1)) == (1, 3, 1)


def test_coarsened_fold():
    """A coarsened grid still beyond 65535 in y keeps a fold, of the
    coarsened grid (runtime/args.py hardware_grid's)."""
    from diffgpu.lowering.coarsen.rows import folded_grid, hardware_yz
    from diffgpu.runtime.args import grid_fold, hardware_grid
    assert folded_grid((65536, 1), 16) == ()
    assert folded_grid((), 16) == ()
    assert folded_grid((2 ** 23, 1), 64) == grid_fold((1, 2 ** 17, 1)) == (2 ** 17, 1)
    for y, z in ((2 ** 17, 1), (70001, 3), (65536, 2)):
        assert hardware_yz(y, z) == hardware_grid((1, y, z))[1:]


@pytest.mark.parametrize("rows", [8, 10, 3])
def test_shared_memory_kernel(rows, few_blocks):
    """shift_rows_shared stages its row in a shared array (its reverse: a
    shared shadow zeroed by thread (0, 0, 0), barriers): coarsened, right."""
    X, g, dY, G = _vjp_scale(C.shift_rows_shared, rows)
    r = S.rows_factor(rows)
    assert _rows_of(few_blocks)[-1] == (r, rows % r)
    np.testing.assert_allclose(G["g"], (dY * np.roll(X, -1, axis=1)).sum(0), atol=1e-12)
    np.testing.assert_allclose(G["X"], np.roll(dY * g, 1, axis=1), atol=1e-12)


def test_shared_memory_iterations_end_in_a_barrier(few_blocks, monkeypatch, sm90_programs):
    """On the GPU the next row's writes of the shared array wait for every
    thread's reads of this row's (the CPU runs a loop with barriers
    iteration by iteration, so only the IR shows it): in the sm_90 "gpu"
    stage the row loop's body ends with a gpu.barrier (then only the
    register sum of dg's adds)."""
    import diffgpu.driver.compiler as CC
    from diffgpu._mlir import ir
    from diffgpu.interop import compile_only
    from diffgpu.lowering.common import session
    from diffgpu.lowering.common.ir_util import walk
    texts = []
    compile_ptx = CC.compile_ptx

    def spy(text, chip):
        texts.append(text)
        return compile_ptx(text, chip)
    monkeypatch.setattr(CC, "compile_ptx", spy)
    X = np.zeros((10, C.COLS))
    C.shift_rows_shared._programs.clear()
    with compile_only("sm_90"):
        dg.vjp(C.shift_rows_shared[C.launch(10)], np.zeros_like(X), X, np.ones(C.COLS),
               cotangents={"Y": X})
    assert few_blocks[-1]["rows"] == [8, 2]
    text = CC.compile(texts[-1], "sm_90", up_to_stage="gpu").text
    with session.context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        loops = [o for o in walk(module.operation) if o.name == "scf.for"
                 and any(x.name == "gpu.barrier" for x in walk(o, include_self=False))]
        assert len(loops) == 1
        body = [o.operation for o in loops[0].regions[0].blocks[0].operations]
        last = max(i for i, o in enumerate(body) if o.name == "gpu.barrier")
        # after it only the accumulation of the summed adds (combine-adds)
        assert [o.name for o in body[last + 1:]] == ["arith.addf", "scf.yield"]


def test_rows_written_in_the_kernel(few_blocks):
    """layernorm_fast_rows (4 rows per block in the kernel, its reverse
    unrolled, guards nested in folded guards) launched on 4 blocks of y:
    the rows fact (2, 0) reaches its reverse, which compiles (the guard
    folding erased nested guards once and read them after) and is right."""
    X, g, b, dY = _ln_data(np.float64, 4 * K.ROWS, seed=6)
    G = dg.vjp(K.layernorm_fast_rows[K.rows_launch(len(X))], np.zeros_like(X), X, g, b,
               cotangents={"Y": dY})
    assert "rows=2,0" in few_blocks[-1]["facts"]
    dX, dg_, db = P.layernorm_vjp(X, g, b, dY)
    np.testing.assert_allclose(G["X"], dX, atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(G["g"], dg_, atol=1e-9, rtol=1e-10)
    np.testing.assert_allclose(G["b"], db, atol=1e-9, rtol=1e-10)


def test_bundle_variants_take_no_rows_fact(few_blocks, tmp_path):
    """A bundle's variants are primal programs: keyed without the rows fact,
    so the variant compiled for a launch on 10 blocks of y serves one on 20
    (their rows facts differ: (8, 2) and (16, 4))."""
    from diffgpu.driver.bundle import load_bundle
    from diffgpu.driver.launch import STATS
    types = ("float64[:, :]", "float64[:, :]", "float64[:]")
    ex = [np.zeros((10, C.COLS)), np.ones((10, C.COLS)), np.ones(C.COLS)]
    c = dg.compile(C.scale_rows, types, grid=(1, 10), block=(C.COLS, 1), example_args=ex)
    assert len(c.variants) == 1 and not any("rows=" in k for k in c.variants)
    path = str(tmp_path / "rows.dgb")
    dg.save_bundle(path, [c])
    b = load_bundle(path)
    X, g = np.random.RandomState(7).randn(20, C.COLS), np.random.RandomState(8).randn(C.COLS)
    Y = np.zeros_like(X)
    before = STATS["bundle_variant"]
    b["scale_rows"][(1, 20), (C.COLS, 1)](Y, X, g)
    assert STATS["bundle_variant"] == before + 1
    np.testing.assert_allclose(Y, X * g)


def test_sm90_coarsened_grid_still_folded(monkeypatch, tmp_path, sm90_programs):
    """2^23 rows: R = 64 leaves 131072 blocks of y, beyond the GPU's 65535:
    the program is compiled for the fold of the coarsened grid, and the
    launch runs ceil(2^23 / 64) rows folded into (43691, 3)."""
    from diffgpu.driver.launch import Program
    from diffgpu.interop import compile_only
    from diffgpu.runtime.args import hardware_grid
    from diffgpu.runtime.fastpath import gpu_grid
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path))
    S._SHAPED.clear()
    n = 2 ** 23
    X = np.zeros((n, C.COLS), np.float32)  # never written: no pages touched
    C.scale_rows._programs.clear()
    _forget(C.scale_rows)
    with compile_only("sm_90"):
        dg.vjp(C.scale_rows[C.launch(n)], np.zeros_like(X), X, np.ones(C.COLS, np.float32),
               cotangents={"Y": X})
    S._SHAPED.clear()
    (p,) = _reverse_payloads(C.scale_rows)
    assert p["rows"] == [64, 0] and p["grid_fold"] == [n // 64, 1]
    prog = Program.__new__(Program)
    prog.coarsen, prog.grid_fold, prog.rows, prog.entry = 1, (n // 64, 1), (64, 0), p["entry"]
    assert gpu_grid(prog, (1, n, 1)) == hardware_grid((1, n // 64, 1)) == (1, 43691, 3)
    assert len(re.findall(r"\batom\.global\.add\.f32", p["ptx"])) == 1
    # the kernel reads its row from the coarsened fold (hy = 43691), not the
    # launch's (2^23 rows: hy = 65028, hz = 129)
    assert hardware_grid((1, n, 1)) == (1, 65028, 129)
    assert re.search(r"\b43691\b", p["ptx"]) and not re.search(r"\b65028\b", p["ptx"])


@pytest.mark.parametrize("rows", [8, 10, 3])
def test_prefetched_layernorm_reverse_is_bitwise_the_uncoarsened_dx(rows, few_blocks,
                                                                     monkeypatch):
    """layernorm_fast's coarsened reverse loads X and dY of the next row an
    iteration ahead (the remark counts the 8 loads); dX, computed per row
    from the same values, is bit for bit the uncoarsened program's, the
    parameter gradients (summed over the block's rows first) within float32
    reassociation."""
    X, g, b, dY = _ln_data(np.float32, rows, seed=3)
    launch = K.layernorm_fast[K.fast_launch(rows)]
    G = dg.vjp(launch, np.zeros_like(X), X, g, b, cotangents={"Y": dY})
    payload = few_blocks[-1]
    assert payload["rows"] == list(_rows_of(few_blocks)[-1]) and payload["rows"][0] > 1
    assert any("coarsen-rows [applied]" in r and "8 loads of the next row issued an "
               "iteration ahead" in r for r in payload["remarks"]), payload["remarks"]
    _off(monkeypatch, K.layernorm_fast)
    H = dg.vjp(launch, np.zeros_like(X), X, g, b, cotangents={"Y": dY})
    assert _rows_of(few_blocks)[-1] == ()
    assert np.array_equal(G["X"], H["X"])
    for name in ("g", "b"):
        np.testing.assert_allclose(G[name], H[name], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("rows", [8, 10])
def test_loads_under_a_branch_are_not_prefetched(rows, few_blocks):
    """scale_rows_masked is coarsened, but its row's loads sit under the
    branch (only some iterations would read them): the remark says why
    nothing is loaded ahead, and the gradients are right."""
    rs = np.random.RandomState(5)
    X, g, dY = rs.randn(rows, C.COLS), rs.randn(C.COLS), rs.randn(rows, C.COLS)
    m = np.where(np.arange(C.COLS) % 3 == 0, -1.0, 1.0)
    G = dg.vjp(C.scale_rows_masked[C.launch(rows)], np.zeros_like(X), X, g, m,
               cotangents={"Y": dY})
    payload = few_blocks[-1]
    assert payload["rows"][0] > 1
    assert any("coarsen-rows [missed]" in r and "no prefetch of the next row: no load of an "
               "array it never writes at indices of the loop's row" in r
               for r in payload["remarks"]), payload["remarks"]
    keep = m > 0
    np.testing.assert_allclose(G["g"], np.where(keep, (dY * X).sum(0), 0.0), atol=1e-12)
    np.testing.assert_allclose(G["X"], np.where(keep, dY * g, 0.0), atol=1e-12)
