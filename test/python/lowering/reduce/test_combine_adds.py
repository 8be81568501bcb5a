"""diffgpu-combine-adds (lowering/reduce/combine_adds.py): the gradients of
parameters read by every row (g and b of `y = g * x + b`, a layer norm's
weights) are summed over the rows a block handles in registers, then added
once per block and column; compared with the program built with the switch
off, with float64 numpy and with finite differences (CPU), and counted in
the sm_90 PTX."""
import re

import numpy as np
import pytest

import diffgpu as dg
from kernels_rows_params import (COLS, ROWS, THREADS, affine_one_row, affine_rows,
                                 affine_rows4, layernorm_ref, layernorm_rows, layernorm_vjp,
                                 two_adds)


@dg.kernel
def d_affine_rows4(y, dy, x, dx, g, dg_, b, db):
    dg.autodiff(affine_rows4, dg.Duplicated(y, dy), dg.Duplicated(x, dx),
                dg.Duplicated(g, dg_), dg.Duplicated(b, db))


@dg.kernel
def d_affine_rows(y, dy, x, dx, g, dg_, b, db):
    dg.autodiff(affine_rows, dg.Duplicated(y, dy), dg.Duplicated(x, dx),
                dg.Duplicated(g, dg_), dg.Duplicated(b, db))


@dg.kernel
def d_affine_one_row(y, dy, x, dx, g, dg_, b, db):
    dg.autodiff(affine_one_row, dg.Duplicated(y, dy), dg.Duplicated(x, dx),
                dg.Duplicated(g, dg_), dg.Duplicated(b, db))


@dg.kernel
def d_layernorm(y, dy, x, dx, g, dg_, b, db):
    dg.autodiff(layernorm_rows, dg.Duplicated(y, dy), dg.Duplicated(x, dx),
                dg.Duplicated(g, dg_), dg.Duplicated(b, db))


def _affine(rng, rows, cols, dtype):
    x = rng.standard_normal((rows, cols)).astype(dtype)
    g = rng.standard_normal(cols).astype(dtype)
    b = rng.standard_normal(cols).astype(dtype)
    dy = rng.standard_normal((rows, cols)).astype(dtype)
    return x, g, b, dy


def _off(monkeypatch, *kernels):
    """The switch off for kernels compiled from now on (their programs forgotten)."""
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    for k in kernels:
        k._programs.clear()


def _vjp(kernel, grid, block, x, g, b, dy):
    y = np.zeros_like(x)
    return dg.vjp(kernel[grid, block], y, x, g, b, cotangents={"y": dy})


def _check_affine(grads, x, g, dy, tol):
    x64, g64, dy64 = (a.astype(np.float64) for a in (x, g, dy))
    np.testing.assert_allclose(grads["x"], dy64 * g64, rtol=tol, atol=tol)
    np.testing.assert_allclose(grads["g"], (dy64 * x64).sum(0), rtol=tol, atol=tol)
    np.testing.assert_allclose(grads["b"], dy64.sum(0), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# values on the CPU: on, off, numpy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,grid", [(affine_rows4, (21 + ROWS - 1) // ROWS), (affine_rows, 3),
                                         (affine_one_row, 21)])
def test_row_parameter_gradients_match_numpy_and_the_switched_off_program(
        kernel, grid, monkeypatch):
    """21 rows (not a multiple of ROWS: the last block's guards), 40
    columns in blocks of 64 threads (guarded columns too)."""
    x, g, b, dy = _affine(np.random.default_rng(0), 21, 40, np.float32)
    on = _vjp(kernel, grid, 64, x, g, b, dy)
    _check_affine(on, x, g, dy, 2e-5)
    _off(monkeypatch, kernel)
    off = _vjp(kernel, grid, 64, x, g, b, dy)
    _check_affine(off, x, g, dy, 2e-5)
    for name in ("x", "g", "b"):
        np.testing.assert_allclose(on[name], off[name], rtol=1e-5, atol=1e-6)


def test_enzyme_convention_gradients_accumulate_into_given_shadows():
    """dg.autodiff adds into the shadows the caller passes (non-zero here)."""
    x, g, b, dy = _affine(np.random.default_rng(1), 16, 32, np.float32)
    y = np.zeros_like(x)
    dx, dg0, db0 = np.ones_like(x), np.full(32, 2.0, np.float32), np.full(32, -1.0, np.float32)
    dg_, db = dg0.copy(), db0.copy()
    d_affine_rows4[16 // ROWS, 32](y, dy.copy(), x, dx, g, dg_, b, db)
    np.testing.assert_allclose(dx, 1.0 + dy * g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg_, dg0 + (dy.astype(np.float64) * x).sum(0), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(db, db0 + dy.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, g * x + b, rtol=1e-6, atol=1e-6)


def test_two_adds_into_one_element():
    """out[0] += x[i]; out[0] += x[i]^2: one add per thread, then per block."""
    x = np.random.default_rng(2).standard_normal(1000)
    out = np.zeros(1)
    two_adds[4, 256](out, x)
    np.testing.assert_allclose(out, [x.sum() + (x * x).sum()], rtol=1e-12)


def test_layernorm_rows_gradients(monkeypatch):
    """float32 (the kernel's shared sums are float32)."""
    dtype, tol = np.float32, 3e-4
    rows = 2 * ROWS
    rng = np.random.default_rng(3)
    x = rng.standard_normal((rows, COLS)).astype(np.float32)
    g = (1 + 0.1 * rng.standard_normal(COLS)).astype(np.float32)
    b = rng.standard_normal(COLS).astype(np.float32)
    dy = rng.standard_normal((rows, COLS)).astype(np.float32)
    x, g, b, dy = (a.astype(dtype) for a in (x, g, b, dy))
    y = np.zeros_like(x)
    layernorm_rows[rows // ROWS, THREADS](y, x, g, b)
    np.testing.assert_allclose(y, layernorm_ref(x, g, b), rtol=tol, atol=tol)
    grads = _vjp(layernorm_rows, rows // ROWS, THREADS, x, g, b, dy)
    for got, want in zip((grads["x"], grads["g"], grads["b"]), layernorm_vjp(x, g, b, dy)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    _off(monkeypatch, layernorm_rows)
    off = _vjp(layernorm_rows, rows // ROWS, THREADS, x, g, b, dy)
    for name in ("x", "g", "b"):
        np.testing.assert_allclose(grads[name], off[name], rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,grid", [(affine_rows4, 2), (affine_rows, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_differences(kernel, grid, dtype):
    x, g, b, _ = _affine(np.random.default_rng(4), 7, 5, dtype)
    y = np.zeros_like(x)
    tol = dict(eps=1e-3, atol=1e-3, rtol=1e-3) if dtype == np.float32 else {}
    assert dg.gradcheck(kernel[grid, 8], dg.Duplicated(y, np.zeros_like(y)),
                        dg.Duplicated(x, np.zeros_like(x)), dg.Duplicated(g, np.zeros_like(g)),
                        dg.Duplicated(b, np.zeros_like(b)), **tol)


# ---------------------------------------------------------------------------
# the GPU code: atomics in the sm_90 PTX, on and off
# ---------------------------------------------------------------------------

def _ptx(kernel, args, grid, block):
    from diffgpu.driver.compiler import has_nvptx
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    return kernel.ir(*args, stage="ptx", target="sm_90", grid=grid, block=block)


def _atomics(ptx, dtype="f32"):
    return len(re.findall(rf"\b(?:atom|red)\.global\.add\.{dtype}\b", ptx))


def _grad_args(rows, cols, dtype=np.float32):
    z2 = [np.zeros((rows, cols), dtype) for _ in range(4)]
    z1 = [np.zeros(cols, dtype) for _ in range(4)]
    return (*z2, *z1)


def test_ptx_unrolled_rows_one_add_per_column(monkeypatch):
    """ROWS rows per block: dx keeps one add per element (ROWS), dg and db
    one each instead of ROWS each."""
    args = _grad_args(64, 256)
    on = _atomics(_ptx(d_affine_rows4, args, 64 // ROWS, 256))
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    off = _atomics(_ptx(d_affine_rows4, args, 64 // ROWS, 256))
    assert (on, off) == (ROWS + 2, 3 * ROWS)


def _stores(ptx):
    return len(re.findall(r"\bst\.global\.(?:f32|b32)\b", ptx))


def test_ptx_layernorm_rows(monkeypatch):
    """The layer norm's reverse (ROWS rows unrolled): dx's two adds per
    element (x is read twice) become one, a plain update (the row is the
    block's, the column the thread's; it keeps its atomic for launches the
    test refuses); dg's and db's ROWS adds per column become one."""
    args = _grad_args(4 * ROWS, COLS)
    on = _ptx(d_layernorm, args, 4, THREADS)
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    off = _ptx(d_layernorm, args, 4, THREADS)
    per = COLS // THREADS
    dx = ROWS * per
    assert (_atomics(on), _atomics(off)) == (dx + 2 * per, 2 * dx + 2 * ROWS * per)
    assert _stores(on) == _stores(off) + dx
    assert "malloc" not in on


def _atomics_in_loops(text):
    """(adds inside an scf.for, adds outside) in the IR text of a stage."""
    stack, inside, outside = [], 0, 0
    for line in text.splitlines():
        if "atomic_rmw addf" in line or "diffgpu.atomic_add" in line:
            if "for" in stack:
                inside += 1
            else:
                outside += 1
        for ch in line:
            if ch == "{":
                stack.append("for" if "scf.for" in line else "other")
            elif ch == "}" and stack:
                stack.pop()
    return inside, outside


def test_row_loop_adds_after_the_loop(monkeypatch):
    """The grid-stride loop: the dx add stays in the loop; the dg and db
    adds come after it (the loop carries their sums in registers)."""
    args = _grad_args(64, 256)
    on = d_affine_rows.ir(*args, stage="gpu", target="sm_90", grid=8, block=256)
    assert _atomics_in_loops(on) == (1, 2) and "iter_args" in on
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    off = d_affine_rows.ir(*args, stage="gpu", target="sm_90", grid=8, block=256)
    assert _atomics_in_loops(off) == (3, 0)


def _combined(kernel, args, grid, block):
    """The launch's module after autodiff, and after diffgpu-combine-adds alone."""
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    from diffgpu.lowering.registry import build_pass_manager, run_passes
    text = kernel.ir(*args, stage="autodiff", target="sm_90", grid=grid, block=block)
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        run_passes(build_pass_manager("diffgpu-combine-adds", ctx), module)
        return text, str(module)


def _after_combine(kernel, args, grid, block):
    """(adds before, adds after) diffgpu-combine-adds."""
    return tuple(t.count('"diffgpu.atomic_add"') for t in _combined(kernel, args, grid, block))


def test_two_adds_become_one_before_the_block_sum():
    """Two adds into out[0] in one guard: one add of their sum (no flag:
    they share the guard), which the block aggregation then sums once."""
    args = (np.zeros(1, np.float32), np.zeros(1100, np.float32))
    assert _after_combine(two_adds, args, 5, 256) == (2, 1)


def test_unrolled_rows_adds_counted_in_the_ir():
    """d_affine_rows4: 4 adds into each of dx, dg, db; dg's and db's become
    one each; dx's, at the rows of the block and the thread's column, become
    plain updates (under the 1-D launch's test), keeping their atomic in
    the other branch."""
    before, after = _after_combine(d_affine_rows4, _grad_args(64, 256), 64 // ROWS, 256)
    assert (before, after) == (3 * ROWS, ROWS + 2)


def test_owned_and_shared_elements():
    """Plain updates only where one thread owns the element: dx[r, c] of the
    unrolled rows, of the grid-stride loop and of one row per block (the
    block's row, the thread's column); never dg[c] or db[c] (every block
    adds there). In the reverse function, dx, dg and db are arguments 5-7."""
    for kernel, grid, owned in ((d_affine_rows4, 64 // ROWS, ROWS), (d_affine_rows, 8, 1),
                                (d_affine_one_row, 64, 1)):
        _, text = _combined(kernel, _grad_args(64, 256), grid, 256)
        rev = text[text.index("func.func @__dg_rev"):]
        plain = re.findall(r"memref\.store %\S+, %arg(\d+)\[", rev)
        assert plain.count("5") == owned, (kernel.name, plain)
        assert plain.count("6") == plain.count("7") == 0
        assert rev.count('"diffgpu.atomic_add"(%arg6') == 1  # dg: one add, atomic


def test_one_row_per_block_unchanged(monkeypatch):
    """One row per block: nothing to combine (one add per element into each
    gradient either way); dx's add becomes plain, keeping its atomic for
    launches the ownership test refuses."""
    args = _grad_args(16, 256)
    on = _ptx(d_affine_one_row, args, 16, 256)
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    off = _ptx(d_affine_one_row, args, 16, 256)
    assert _atomics(on) == _atomics(off) == 3
    assert _stores(on) == _stores(off) + 1


def test_switch_is_part_of_the_cache_key(monkeypatch):
    from diffgpu.runtime.store.cache_key import cache_key
    on = cache_key(affine_rows4, ("x",), "sm_90")
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    assert cache_key(affine_rows4, ("x",), "sm_90") != on
