"""A launch whose derivative's heap tapes would not fit the heap is a
LaunchError before it runs (runtime/launch_checks.py `check_heap`, from the
words the compiler records: lowering/facts/heap_tape.py), on every path:
dg.autodiff inside a kernel, dg.vjp, dg.compile; a smaller launch runs as
before. The CPU's limit is DIFFGPU_HEAP_BYTES; the GPU's branch is checked
with the device's numbers stood in."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import launch_checks as LC
from kernels_loop_tapes import nbody_grad, scan_written, scan_written_grad


@dg.kernel
def shape_loop(a, x):
    """The trip count from an array's extent: a.shape[1] - 1."""
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        for t in range(a.shape[1] - 1):
            s = s * 0.5 + dg.sin(a[i, t])
            a[i, t + 1] = s
        x[i] = s


@dg.kernel
def shape_loop_grad(a, da, x, dx):
    dg.autodiff(shape_loop, dg.Duplicated(a, da), dg.Duplicated(x, dx))


@dg.kernel
def while_loop(a, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        t = 0
        while t < n:
            s = s * 0.5 + dg.sin(a[i, t])
            a[i, t + 1] = s
            t += 1
        x[i] = s


@dg.kernel
def while_loop_grad(a, da, x, dx, n):
    dg.autodiff(while_loop, dg.Duplicated(a, da), dg.Duplicated(x, dx), n)


def _args(n, threads, seed=0):
    r = np.random.default_rng(seed)
    a = r.uniform(-1, 1, (threads, n + 1))
    x = r.uniform(-1, 1, threads)
    return [a, np.zeros_like(a), x, np.ones_like(x), n]


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same(a, b):
    return all((u == v).all() if isinstance(u, np.ndarray) else u == v for u, v in zip(a, b))


LIMIT = 64 * 1024  # bytes


def test_tape_bytes():
    assert LC.tape_bytes(0, 128) == LC.tape_bytes(128, 128) == 0   # on the thread's stack
    assert LC.tape_bytes(129, 128) == 8 * 256                      # one heap buffer
    assert LC.tape_bytes(300, 128) == 8 * (512 + 256)              # the last two buffers
    assert LC.tape_bytes(1000, 128) == 8 * (1024 + 512)


def test_the_words_are_recorded_as_a_formula_of_the_launch():
    args = _args(300, 64)
    scan_written_grad[1, 64](*args)
    (prog,) = scan_written_grad._programs.values()
    tape = prog.heap_tape
    assert tape["initial"] == 128
    assert LC.evaluate(tape["words"], args, (1, 1, 1), (64, 1, 1)) == 300
    assert LC.evaluate(tape["words"], args[:4] + [7], (1, 1, 1), (64, 1, 1)) == 7
    a = np.zeros((4, 51))
    shape_loop_grad[1, 4](a, np.zeros_like(a), np.zeros(4), np.ones(4))
    (prog,) = shape_loop_grad._programs.values()
    assert LC.evaluate(prog.heap_tape["words"], [a, a, None, None], (1, 1, 1), (4, 1, 1)) == 50
    x = np.zeros(64, np.float32)
    nbody_grad[1, 64](x.copy(), np.ones(64, np.float32), x.copy(), x.copy(), x.copy(), x.copy())
    assert {p.heap_tape for p in nbody_grad._programs.values()} == {None}  # recomputed: no tape


def test_a_launch_over_the_limit_is_refused_and_changes_nothing(monkeypatch):
    want = _args(100, 64)
    scan_written_grad[1, 64](*want)  # no limit set: the default 1 GiB
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    big = _args(300, 64)
    before = _copies(big)
    for _ in range(2):  # the full path, then the checked level of a known token
        with pytest.raises(dg.LaunchError) as e:
            scan_written_grad[1, 64](*big)
        assert _same(big, before)
    msg = str(e.value)
    assert msg.startswith("kernel 'scan_written_grad': its derivative keeps a tape of 300 "
                          "words per thread on the heap (6144 bytes each at its peak, 64 "
                          "threads of a block alive at once: 393216 bytes)"), msg
    assert f"DIFFGPU_HEAP_BYTES) of {LIMIT} bytes" in msg
    small = _args(100, 64)  # 100 words: on the stack
    scan_written_grad[1, 64](*small)
    assert _same(small, want)
    mid = _args(300, 8)  # 8 threads x 6144 bytes = 49152 <= 65536
    ref = _copies(mid)
    monkeypatch.delenv(LC.HEAP_ENV)
    scan_written_grad[1, 8](*ref)
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    scan_written_grad[1, 8](*mid)
    assert _same(mid, ref)


def test_the_trip_count_from_an_extent(monkeypatch):
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    a = np.random.default_rng(3).uniform(-1, 1, (64, 301))
    with pytest.raises(dg.LaunchError, match="kernel 'shape_loop_grad': .* tape of 300 words"):
        shape_loop_grad[1, 64](a, np.zeros_like(a), np.zeros(64), np.ones(64))
    a = a[:, :101].copy()
    shape_loop_grad[1, 64](a, np.zeros_like(a), np.zeros(64), np.ones(64))


def test_vjp_and_compiled_kernels_are_refused(monkeypatch):
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    big = _args(300, 64)
    cots = {"a": np.ones_like(big[0]), "x": np.ones(64)}
    with pytest.raises(dg.LaunchError, match="kernel 'scan_written'.* tape of 300 words"):
        dg.vjp(scan_written[1, 64], big[0], big[2], 300, cotangents=cots)
    small = _args(100, 64)
    g = dg.vjp(scan_written[1, 64], small[0], small[2], 100,
               cotangents={"a": np.ones_like(small[0]), "x": np.ones(64)})
    monkeypatch.delenv(LC.HEAP_ENV)
    g2 = dg.vjp(scan_written[1, 64], small[0], small[2], 100,
                cotangents={"a": np.ones_like(small[0]), "x": np.ones(64)})
    assert _same([g["a"], g["x"]], [g2["a"], g2["x"]])
    entry = dg.compile(scan_written_grad, ("float64[:, :]", "float64[:, :]", "float64[:]",
                                           "float64[:]", "int64"), target="host")
    assert entry.payload["heap_tape"]["words"] is not None
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    before = _copies(big)
    with pytest.raises(dg.LaunchError, match="kernel 'scan_written_grad'"):
        entry[1, 64](*big)
    assert _same(big, before)
    entry[1, 64](*small)


def test_a_while_loop_is_not_known_before_the_launch(monkeypatch):
    """No formula for a while loop's trips: recorded as unknown, not checked."""
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    args = _args(300, 64)
    while_loop_grad[1, 64](*args)
    (prog,) = while_loop_grad._programs.values()
    assert prog.heap_tape == {"words": None, "initial": 128}


def test_the_gpu_branch(monkeypatch):
    """sm_90, no GPU needed: the heap and the threads held at once come from
    runtime/gpu.py `heap_room` (stood in); DIFFGPU_HEAP_BYTES can only lower
    the limit the check assumes."""
    from diffgpu.runtime import gpu
    from diffgpu.runtime.args import Signature

    entry = dg.compile(scan_written_grad, ("float64[:, :]", "float64[:, :]", "float64[:]",
                                           "float64[:]", "int64"), target="sm_90")
    prog = entry.program_for(None)
    sig = Signature(prog.flat_types, "gpu", 0)
    args = _args(300, 64)
    room = {"held": 1024}
    monkeypatch.setattr(gpu, "heap_room", lambda device: (1 << 20, room["held"]))
    monkeypatch.delenv(LC.HEAP_ENV, raising=False)
    # 16 blocks x 64 threads, all held at once, x 6144 bytes = 6 MiB > the 1 MiB heap
    with pytest.raises(dg.LaunchError, match=r"1024 threads alive at once \(of 1024\): "
                                             r"6291456 bytes\), more than the GPU's malloc "
                                             r"heap of 1048576 bytes"):
        LC.check_heap(prog, args, (16, 1, 1), (64, 1, 1), sig)
    room["held"] = 128  # the device holds 128 threads at once: 786432 bytes fit
    LC.check_heap(prog, args, (16, 1, 1), (64, 1, 1), sig)
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    with pytest.raises(dg.LaunchError, match="more than the DIFFGPU_HEAP_BYTES limit of 65536"):
        LC.check_heap(prog, args, (16, 1, 1), (64, 1, 1), sig)
    monkeypatch.setenv(LC.HEAP_ENV, "lots")
    with pytest.raises(dg.LaunchError, match="DIFFGPU_HEAP_BYTES='lots': expected a number"):
        LC.check_heap(prog, args, (16, 1, 1), (64, 1, 1), sig)


def test_bundles_keep_the_words_and_refuse_malformed_ones(tmp_path, monkeypatch):
    import hashlib
    import json
    import zipfile
    from diffgpu.driver.bundle import BundleError

    path = str(tmp_path / "k.dgb")
    dg.save_bundle(path, [dg.compile(scan_written_grad, ("float64[:, :]", "float64[:, :]",
                                                         "float64[:]", "float64[:]", "int64"),
                                     target="host")])
    monkeypatch.setenv(LC.HEAP_ENV, str(LIMIT))
    k = dg.load_bundle(path)["scan_written_grad"]
    big = _args(300, 64)
    with pytest.raises(dg.LaunchError, match="kernel 'scan_written_grad'.* 300 words"):
        k[1, 64](*big)
    k[1, 64](*_args(100, 64))
    with zipfile.ZipFile(path) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    manifest = json.loads(files["manifest.json"])
    (rec,) = manifest["entries"]
    for bad in ({"words": ["arg"], "initial": 128}, {"words": ["pow", ["c", 2]], "initial": 1},
                {"words": None}, "300"):
        payload = json.loads(files[rec["file"]])
        payload["heap_tape"] = bad
        body = json.dumps(payload).encode()
        rec["sha256"] = hashlib.sha256(body).hexdigest()
        out = dict(files, **{rec["file"]: body, "manifest.json": json.dumps(manifest).encode()})
        p = str(tmp_path / "bad.dgb")
        with zipfile.ZipFile(p, "w") as z:
            for name, data in out.items():
                z.writestr(name, data)
        with pytest.raises(BundleError, match="heap_tape"):
            dg.load_bundle(p)
