"""Grids with y or z beyond the GPU's 65535: accepted everywhere, run on the
CPU as they are, folded onto a legal hardware grid on the GPU
(runtime/args.py `hardware_grid`, lowering/gpu/ops.py `fold_geometry`).
GPU launches are checked through bench/launch_overhead.py's CuPy stand-in
(the grid each launch hands CuPy) and by reading the PTX."""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import LaunchError
from diffgpu.runtime import gpu, specialize
from diffgpu.runtime.args import GRID_ROWS, HW_GRID_YZ, check_geometry, hardware_grid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import launch_overhead as LO  # noqa: E402  (the CuPy stand-in)
import vjp_overhead as VO  # noqa: E402  (its allocations)


@dg.kernel
def block_ids(out, count):
    """Each block writes its (x, y, z) ids and the grid into its own row."""
    if dg.thread_id(0) == 0:
        b = (dg.block_id(2) * dg.grid_dim(1) + dg.block_id(1)) * dg.grid_dim(0) + dg.block_id(0)
        out[b, 0] = dg.block_id(0)
        out[b, 1] = dg.block_id(1)
        out[b, 2] = dg.block_id(2)
        out[b, 3] = dg.grid_dim(1) * 100000 + dg.grid_dim(2)
        dg.atomic_add(count, 0, 1)


def _expected(grid):
    gx, gy, gz = grid
    b = np.arange(gx * gy * gz)
    x, y, z = b % gx, (b // gx) % gy, b // (gx * gy)
    return np.stack([x, y, z, np.full_like(b, gy * 100000 + gz)], axis=1)


@pytest.mark.parametrize("grid", [(1, 70000, 1), (2, 1, 70000)])
def test_cpu_runs_every_block_of_a_big_grid_once(grid):
    full = grid + (1,) * (3 - len(grid))
    n = full[0] * full[1] * full[2]
    out = np.full((n, 4), -1, np.int64)
    count = np.zeros(1, np.int64)
    block_ids[grid, 1](out, count)
    assert count[0] == n  # blocks run, counted by the kernel
    np.testing.assert_array_equal(out, _expected(full))


def test_limits():
    assert check_geometry((1, 2**31 - 1), 1)[0] == (1, 2**31 - 1, 1)
    assert check_geometry((1, HW_GRID_YZ, HW_GRID_YZ), 1)[0] == (1, HW_GRID_YZ, HW_GRID_YZ)
    with pytest.raises(LaunchError, match=r"y \* z = .* exceeds the limit"):
        check_geometry((1, 2**31 - 1, 3), 1)
    with pytest.raises(LaunchError, match=r"grid\[1\] = 2147483648 exceeds"):
        check_geometry((1, 2**31), 1)


@pytest.mark.parametrize("y, z", [(65536, 1), (70000, 1), (1, 70000), (65536, 2),
                                  (100003, 7), (HW_GRID_YZ, HW_GRID_YZ), (GRID_ROWS, 1),
                                  (3, 2**30)])
def test_hardware_grid_covers_each_row_once(y, z):
    gx, hy, hz = hardware_grid((5, y, z))
    assert gx == 5 and 1 <= hy <= HW_GRID_YZ and 1 <= hz <= HW_GRID_YZ
    rows = y * z
    assert rows <= hy * hz < rows + hz  # fewer spare rows than hz
    # the mapping the lowering uses: row = by + bz * hy -> (row % y, row // y)
    for by, bz in ((0, 0), (hy - 1, 0), (0, 1 % hz), (hy - 1, hz - 1)):
        row = by + bz * hy
        if row < rows:
            assert 0 <= row % y < y and 0 <= row // y < z


def test_small_grids_are_not_folded():
    for grid in ((7, 1, 1), (1, HW_GRID_YZ, 1), (3, HW_GRID_YZ, HW_GRID_YZ)):
        assert hardware_grid(grid) == grid


# ---------------------------------------------------------------------------
# PTX of the folded program
# ---------------------------------------------------------------------------

def _entry(ptx: str) -> str:
    return ptx[ptx.index(".entry"):]


@pytest.mark.parametrize("switch", [True, False])
def test_folded_ptx_reads_rows_and_returns_past_the_last(monkeypatch, switch):
    monkeypatch.setattr(specialize, "ENABLED", switch)  # the fold is kept with it off
    out, count = np.zeros((4, 4), np.int64), np.zeros(1, np.int64)
    plain = _entry(block_ids.ir(out, count, stage="ptx", target="sm_90", grid=(3, 600, 2),
                                block=32))
    folded = _entry(block_ids.ir(out, count, stage="ptx", target="sm_90",
                                 grid=(3, 65536, 2), block=32))
    assert hardware_grid((3, 65536, 2)) == (3, 43691, 3)
    assert "%nctaid.y" in plain and "%nctaid.y" not in folded
    assert "%nctaid.z" in plain and "%nctaid.z" not in folded
    # row = ctaid.y + ctaid.z * 43691; 3 * 43691 - 131072 = 1 spare row returns
    assert re.search(r"(mad\.lo\.s32|mul\.wide\.u32)\s+%r\w+, %r\w+, 43691\b", folded), folded
    assert re.search(r"setp\.(gt\.u(32|64)\s+%p\d+, %r\w+, 131071|"
                     r"lt\.u(32|64)\s+%p\d+, %r\w+, 131072)\b", folded), folded
    assert "131071" not in plain and "43691" not in plain


def test_a_fold_without_spare_rows_has_no_guard():
    out, count = np.zeros((4, 4), np.int64), np.zeros(1, np.int64)
    ptx = _entry(block_ids.ir(out, count, stage="ptx", target="sm_90", grid=(2, 70000),
                              block=32))
    assert hardware_grid((2, 70000, 1)) == (2, 35000, 2)
    assert re.search(r"(mad\.lo\.s32|mul\.wide\.u32)\s+%r\w+, %r\w+, 35000\b", ptx), ptx
    assert "69999" not in ptx and "70000" in ptx  # grid_dim(1), no row test


# ---------------------------------------------------------------------------
# GPU launches through the CuPy stand-in: the grid CuPy gets
# ---------------------------------------------------------------------------

@pytest.fixture
def launched(monkeypatch):
    """The (grid, block) of every stand-in kernel launch."""
    VO.install_standin()
    seen = []

    class Function:
        def __call__(self, grid, block, args):
            seen.append((tuple(grid), tuple(block)))

    class RawModule:
        def __init__(self, path=None, code=None):
            pass

        def get_function(self, name):
            return Function()

    sys.modules["cupy"].RawModule = RawModule
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    monkeypatch.setattr(gpu, "_modules", {})
    yield seen
    sys.modules.pop("cupy", None)


@dg.kernel
def rows_square(y, x):
    i = dg.block_id(1) + dg.grid_dim(1) * dg.block_id(2)
    if dg.thread_id(0) == 0 and i < len(x):
        y[i] = x[i] * x[i]


@pytest.mark.parametrize("grid, hw", [((2, 70000), (2, 35000, 2)),
                                      ((1, 1, 70000), (1, 35000, 2)),
                                      ((3, 65536, 2), (3, 43691, 3)),
                                      ((4, 300, 2), (4, 300, 2))])
def test_gpu_launch_gets_the_hardware_grid(launched, grid, hw):
    x, y = (LO.StandinArray(np.ones(16, np.float32)) for _ in range(2))
    for _ in range(3):  # full, checked and reuse levels
        rows_square[grid, 32](y, x)
    assert launched == [(hw, (32, 1, 1))] * 3


def test_gradients_launch_on_the_hardware_grid(launched):
    x, y, ybar, dx, dy = (LO.StandinArray(np.ones(16, np.float32)) for _ in range(5))
    launcher = rows_square[(2, 70000), 32]
    dg.vjp(launcher, y, x, cotangents={"y": ybar})
    dg.autodiff(launcher, dg.Duplicated(y, dy), dg.Duplicated(x, dx))
    dg.jvp(launcher, y, x, tangents={"x": dx})
    dg.fwddiff(launcher, dg.Duplicated(y, dy), dg.Duplicated(x, dx))
    assert len(launched) >= 4
    assert launched and all(g == (2, 35000, 2) for g, _ in launched), launched


def test_a_program_not_folded_for_the_grid_is_refused():
    from diffgpu.runtime import fastpath

    class Program:
        kind, entry, coarsen, grid_fold = "gpu", "k", 1, ()
    with pytest.raises(LaunchError, match="compiled for grids whose y and z extents fit"):
        fastpath.gpu_grid(Program, (1, 70000, 1))
    Program.grid_fold = (70000, 1)
    assert fastpath.gpu_grid(Program, (1, 70000, 1)) == (1, 35000, 2)
    with pytest.raises(LaunchError, match=r"compiled for grids of y, z extents \(70000, 1\)"):
        fastpath.gpu_grid(Program, (1, 70001, 1))
    with pytest.raises(LaunchError):
        fastpath.gpu_grid(Program, (1, 100, 1))


def test_cpu_gradient_over_a_big_grid():
    n = 70000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ybar = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    grads = dg.vjp(rows_square[(1, n), 1], np.zeros(n, np.float32), x, cotangents={"y": ybar})
    np.testing.assert_allclose(grads["x"], 2 * x * ybar, rtol=1e-6)
