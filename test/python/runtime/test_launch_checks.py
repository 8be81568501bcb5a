"""Launch checks that read what the compiler recorded about a program
(runtime/launch_checks.py): a kernel reaching a warp or block collective
runs only on blocks of whole warps, on every path a launch takes (JIT,
dg.compile, bundles, dg.vjp, dg.Tape, a derivative inside a kernel, a
device function), decided once per launch key."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import launch_checks


@dg.func
def _row_total(v):
    return dg.block_sum(v)


@dg.kernel
def through_func(X, Y):
    i = dg.global_id(0)
    Y[i] = _row_total(X[i]) * X[i]


@dg.kernel
def shuffles(X, Y):
    i = dg.global_id(0)
    Y[i] = dg.shfl_xor(X[i], 1) + dg.warp_max(X[i])


@dg.kernel
def plain(X, Y):
    i = dg.global_id(0)
    Y[i] = 2.0 * X[i]


@dg.kernel
def grad_inside(X, dX, Y, dY):
    dg.autodiff(through_func, dg.Duplicated(X, dX), dg.Duplicated(Y, dY))


def _ref_through(X):
    return X.sum() * X


def test_whole_warps_run_partial_warps_are_refused():
    X = np.linspace(0.5, 1.5, 64)
    Y = np.zeros(64)
    through_func[1, 64](X, Y)
    np.testing.assert_allclose(Y, _ref_through(X))
    for block in (48, (16, 3), 1, (8, 2, 3)):
        n = int(np.prod(block))
        Y = np.full(n, 5.0)
        with pytest.raises(dg.LaunchError) as e:
            through_func[1, block](X[:n].copy(), Y)
        shape = (tuple(block) if isinstance(block, tuple) else (block,))
        shape = shape + (1,) * (3 - len(shape))
        assert str(e.value).startswith(f"kernel 'through_func' uses dg.block_sum, which needs "
                                       f"whole warps: block {shape} has {n} threads")
        assert (Y == 5.0).all()


def test_the_message_lists_every_collective():
    with pytest.raises(dg.LaunchError, match=r"kernel 'shuffles' uses dg.shfl_xor, "
                                             r"dg.warp_max, which need whole warps: "
                                             r"block \(33, 1, 1\) has 33 threads"):
        shuffles[1, 33](np.ones(33), np.zeros(33))


def test_kernels_without_collectives_keep_any_block():
    X = np.arange(48.0)
    Y = np.zeros(48)
    plain[1, 48](X, Y)
    assert (Y == 2 * X).all()
    (prog,) = plain._programs.values()
    assert prog.collectives == () and prog.payload["collectives"] == []


def test_the_fact_is_recorded_per_program():
    X = np.ones(64)
    through_func[1, 64](X, np.zeros(64))
    assert {p.payload["collectives"] == ["dg.block_sum"]
            for p in through_func._programs.values()} == {True}
    dX, dY = np.zeros(64), np.ones(64)
    grad_inside[1, 64](X, dX, np.zeros(64), dY)
    np.testing.assert_allclose(dX, 2 * 64.0)  # d/dx_k sum_i (S x_i) = d(S^2)/dx_k = 2 S
    assert {tuple(p.collectives) for p in grad_inside._programs.values()} == {("dg.block_sum",)}


def test_derivatives_are_refused_before_they_run():
    X = np.linspace(0.5, 1.5, 40)
    Y = np.zeros(40)
    with pytest.raises(dg.LaunchError, match="kernel 'through_func' uses dg.block_sum"):
        dg.vjp(through_func[1, 40], X, Y, cotangents={"Y": np.ones(40)})
    with pytest.raises(dg.LaunchError, match="kernel 'through_func' uses dg.block_sum"):
        dg.jvp(through_func[1, 40], X, Y, tangents={"X": np.ones(40)})
    dX = np.full(40, 3.0)
    with pytest.raises(dg.LaunchError, match="kernel 'grad_inside' uses dg.block_sum"):
        grad_inside[1, 40](X, dX, Y, np.ones(40))
    assert (dX == 3.0).all() and (Y == 0.0).all()
    X = np.linspace(0.5, 1.5, 64)
    g = dg.vjp(through_func[1, 64], X, np.zeros(64), cotangents={"Y": np.ones(64)})["X"]
    np.testing.assert_allclose(g, 2 * X.sum())


def test_a_tape_refuses_the_launch_it_records():
    X = np.linspace(0.5, 1.5, 64)
    Y = np.zeros(64)
    with dg.Tape():
        with pytest.raises(dg.LaunchError, match="kernel 'through_func'"):
            through_func[1, 48](X[:48], Y[:48])
    assert (Y == 0.0).all()
    loss = np.zeros(64)
    with dg.Tape() as tape:
        through_func[1, 64](X, Y)
        plain[1, 64](Y, loss)
    (g,) = tape.gradient([loss], wrt=[X], cotangents=[np.ones(64)])
    np.testing.assert_allclose(g, 2.0 * 2 * X.sum())


@pytest.mark.parametrize("how", ["compiled", "bundle"])
def test_compiled_and_bundled_kernels(how, tmp_path):
    entry = dg.compile(through_func, ("float64[:]", "float64[:]"), target="host")
    assert entry.payload["collectives"] == ["dg.block_sum"]
    if how == "bundle":
        path = str(tmp_path / "k.dgb")
        dg.save_bundle(path, [entry])
        entry = dg.load_bundle(path)["through_func"]
    X = np.linspace(0.5, 1.5, 64)
    Y = np.full(64, 5.0)
    for _ in range(2):  # the full path, then the fast path of a known token
        with pytest.raises(dg.LaunchError, match=r"kernel 'through_func' uses dg.block_sum, "
                                                 r".*block \(48, 1, 1\) has 48 threads"):
            entry[1, 48](X[:48].copy(), Y[:48])
        assert (Y == 5.0).all()
    entry[1, 64](X, Y)
    np.testing.assert_allclose(Y, _ref_through(X))


def test_a_bundle_with_a_malformed_collectives_field_is_refused(tmp_path):
    import json
    import zipfile
    from diffgpu.driver.bundle import BundleError

    path = str(tmp_path / "k.dgb")
    dg.save_bundle(path, [dg.compile(through_func, ("float64[:]", "float64[:]"),
                                     target="host")])
    with zipfile.ZipFile(path) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    manifest = json.loads(files["manifest.json"])
    (rec,) = manifest["entries"]
    payload = json.loads(files[rec["file"]])
    payload["collectives"] = "dg.block_sum"  # a string, not a list of names
    body = json.dumps(payload).encode()
    import hashlib
    rec["sha256"] = hashlib.sha256(body).hexdigest()
    files[rec["file"]] = body
    files["manifest.json"] = json.dumps(manifest).encode()
    bad = str(tmp_path / "bad.dgb")
    with zipfile.ZipFile(bad, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    with pytest.raises(BundleError, match="collectives"):
        dg.load_bundle(bad)


def test_decided_once_per_launch_key(monkeypatch):
    """Repeated launches do not check again: the check counts its block's
    threads once per launch key (the fast path keeps the decision)."""
    calls = []
    real = launch_checks.block_threads
    monkeypatch.setattr(launch_checks, "block_threads", lambda b: calls.append(b) or real(b))
    X, Y = np.ones(64), np.zeros(64)
    through_func[1, 64](X, Y)
    calls.clear()
    for _ in range(50):
        through_func[1, 64](X, Y)
    assert len(calls) <= 1


def test_a_gpu_program_is_refused_before_the_gpu_is_touched():
    """sm_90 (compiled here, no GPU needed): the payload records the
    collective, and both ways into a GPU launch (the full path's
    run_program, the fast path's Ready) raise before the program loads."""
    from diffgpu.driver.launch import run_program
    from diffgpu.runtime import fastpath
    from diffgpu.runtime.args import Signature

    entry = dg.compile(through_func, ("float64[:]", "float64[:]"), target="sm_90")
    assert entry.payload["collectives"] == ["dg.block_sum"]
    prog = entry.program_for(None)
    assert prog.kind == "gpu" and prog.collectives == ("dg.block_sum",)
    sig = Signature(prog.flat_types, "gpu", 0)
    assert launch_checks.check_block(prog, (48, 2, 1)) is None  # 96 threads: only the count
    for block in ((48, 1, 1), (1, 1, 1)):
        with pytest.raises(dg.LaunchError, match="kernel 'through_func' uses dg.block_sum"):
            run_program(prog, [object(), object()], sig, (1, 1, 1), block)
        with pytest.raises(dg.LaunchError, match="kernel 'through_func' uses dg.block_sum"):
            fastpath.Ready(prog, sig, (1, 1, 1), block)
    assert prog.gpu._fns == {}  # nothing loaded
