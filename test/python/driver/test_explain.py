"""Optimisation remarks (lowering/common/explain.py, driver/explain.py,
driver/remarks.py): what the passes did not do and why, per program, kept
in its cache entry, printed by DIFFGPU_EXPLAIN=1 on a compile and on a disk
hit alike; `dg.explain(launch, *args)` returns them; explaining changes
neither the cache key nor the code."""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS
from diffgpu.lowering.common import explain as E
import kernels_stencil2d as S


@dg.kernel
def conv_grad(y, dy, x, dx, w, dw):  # Enzyme's convention: dy consumed, dx accumulated
    dg.autodiff(S.conv2d, dg.Duplicated(y, dy), dg.Duplicated(x, dx), dg.Duplicated(w, dw))


@dg.kernel
def rowmaj(y, x, W):  # x[i * W + j + 1]: the thread id i has coefficient W
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        y[i, j] = x[i * W + j + 1] * 2.0


@dg.kernel
def rowmaj_grad(y, dy, x, dx, W):
    dg.autodiff(rowmaj, dg.Duplicated(y, dy), dg.Duplicated(x, dx), W)


def _conv_args():
    y = np.zeros((12, 12), np.float32)
    x = np.ones((16, 16), np.float32)
    w = np.ones((5, 5), np.float32)
    return y, np.ones_like(y), x, np.zeros_like(x), w, np.zeros_like(w)


def test_explain_names_each_missed_optimisation_with_its_line():
    lines = dg.explain(conv_grad[(2, 2), (8, 8)], *_conv_args())
    stencil = [s for s in lines if "stencil-adjoint [missed]" in s]
    assert len(stencil) == 1
    assert "kernels_stencil2d.py:26:" in stencil[0]  # the load x[i + a, j + b]
    assert "25 offsets need 125 KiB of shared memory" in stencil[0]
    assert any("block-sums [applied]" in s and "25 adds summed over the block together" in s
               for s in lines)  # the filter taps: one group


@dg.kernel
def observed(out, x):  # the thread reads out[0] after adding to it
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])
        x[i] = out[0]


def test_aggregate_atomics_says_why_an_add_stays_atomic():
    lines = dg.explain(observed[2, 32], np.zeros(1, np.float32), np.ones(64, np.float32))
    (remark,) = [s for s in lines if "aggregate-atomics [missed]" in s]
    assert "test_explain.py:" in remark and "a later op of the thread may observe" in remark


def test_index_not_affine_in_the_thread_id():
    y, x = np.zeros((4, 8), np.float32), np.ones(40, np.float32)
    lines = dg.explain(rowmaj_grad[(1, 1), (4, 8)], y, np.ones_like(y), x, np.zeros_like(x), 8)
    (remark,) = [s for s in lines if "stencil-adjoint" in s]
    assert "test_explain.py:27:" in remark
    assert "not affine in one thread id" in remark and "[gid0*arg2 + gid1 + 1]" in remark


def test_applied_gather_is_reported_for_dg_vjp():
    y, _, x, _, w, _ = _conv_args()
    with dg.explain(file=False) as ex:
        dg.vjp(S.conv2d[(2, 2), (8, 8)], y, x, w, cotangents={"y": np.ones_like(y)})
    assert any(s.startswith("diffgpu explain: conv2d [reverse cot, grad, dup] on host")
               for s in ex.lines)
    assert any("stencil-gather [applied]" in s and "25 offsets in 2-D" in s for s in ex.lines)


def test_env_prints_on_compile_and_on_disk_hit(monkeypatch, capsys):
    @dg.kernel
    def rm(y, x, W):
        i = dg.global_id(0)
        j = dg.global_id(1)
        if i < y.shape[0] and j < y.shape[1]:
            y[i, j] = x[i * W + j] * 3.0

    @dg.kernel
    def rm_grad(y, dy, x, dx, W):
        dg.autodiff(rm, dg.Duplicated(y, dy), dg.Duplicated(x, dx), W)

    y, x = np.zeros((4, 8), np.float32), np.ones(40, np.float32)
    args = (y, np.ones_like(y), x, np.zeros_like(x), 8)
    monkeypatch.setenv("DIFFGPU_EXPLAIN", "1")
    before = STATS["compile"]
    rm_grad[(1, 1), (4, 8)](*args)
    assert STATS["compile"] == before + 1
    first = capsys.readouterr().err
    assert "diffgpu explain: rm_grad on host:" in first and "not affine" in first
    rm_grad._programs.clear()  # the next launch loads the program from the disk cache
    hits = STATS["disk_hit"]
    rm_grad[(1, 1), (4, 8)](*args)
    assert STATS["disk_hit"] == hits + 1 and STATS["compile"] == before + 1
    assert capsys.readouterr().err == first  # the same remarks, from the entry
    monkeypatch.delenv("DIFFGPU_EXPLAIN")
    rm_grad._programs.clear()
    rm_grad[(1, 1), (4, 8)](*args)
    assert capsys.readouterr().err == ""
    assert STATS["compile"] == before + 1  # explaining never changed the key


def test_explain_false_silences_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("DIFFGPU_EXPLAIN", "1")
    with dg.explain(False):
        dg.explain(conv_grad[(2, 2), (8, 8)], *_conv_args())  # returns, prints nothing
    assert capsys.readouterr().err == ""


def test_bad_explain_calls():
    with pytest.raises(TypeError, match="takes a launch"):
        dg.explain(conv_grad, *_conv_args())
    with pytest.raises(TypeError, match="need a launch"):
        dg.explain(None, 1)


def test_collect_nests_and_deduplicates():
    E.missed("p", None, "outside: dropped")
    with E.collect() as outer:
        E.missed("p", None, "a")
        with E.collect() as inner:
            E.missed("p", None, "b")
            E.missed("p", None, "b")
            E.applied("q", None, "c")
        E.missed("p", None, "a")
    assert [r.text() for r in inner] == ["remark: p [missed]: b", "remark: q [applied]: c"]
    assert [r.message for r in outer] == ["a", "b", "c"]
    assert not E.active()
