"""A derivative's heap tape that cannot grow is a LaunchError after the
launch, never a fault, also when its size is not known before the launch
(lowering/autodiff/tape.py `_grow`, the flag @__dg_tape_overflow; read by
runtime/cpu.py after every launch and by runtime/gpu.py after the launches
runtime/launch_checks.py has it watch). On the CPU `malloc` hardly fails:
DIFFGPU_TAPE_CAP_WORDS makes a bigger buffer count as a failed one."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu import switches
from diffgpu.runtime import launch_checks as LC
from kernels_loop_tapes import scan_written_grad, spin, spin_grad


def _spin_args(trips, threads=8, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, threads)
    n = np.asarray(trips, np.int32) * np.ones(threads, np.int32)
    return [np.zeros(threads), np.ones(threads), x, np.zeros(threads), n]


def _reference(trips, threads=8, seed=0):
    """d out[i] / d x[i] by the chain rule, in float64 numpy."""
    x = np.random.default_rng(seed).uniform(-1, 1, threads)
    n = np.asarray(trips) * np.ones(threads, int)
    g = np.zeros(threads)
    for i in range(threads):
        s, ds = x[i], 1.0
        for _ in range(n[i]):
            s, ds = np.sin(s) * 0.9 + 0.1 * x[i], np.cos(s) * 0.9 * ds + 0.1
        g[i] = ds
    return g


def _fresh(*kernels):
    """Drop the kernels' programs: DIFFGPU_TAPE_CAP_WORDS applies to kernels
    compiled afterwards (a signature compiled in this process keeps its)."""
    for k in kernels:
        k._programs.clear()


@pytest.fixture(autouse=True)
def _programs_compiled_here_stay_here():
    """Programs compiled under the cap must not serve other tests' launches."""
    _fresh(spin, spin_grad, scan_written_grad)
    yield
    _fresh(spin, spin_grad, scan_written_grad)


CAP = 256  # words: 100 trips stay on the stack (128), 200 grow once (256), 300 cannot


def test_a_while_tape_over_the_cap_is_a_launch_error_after_the_launch(monkeypatch):
    monkeypatch.setenv(switches.TAPE_CAP, str(CAP))
    _fresh(spin_grad)
    for trips in (100, 200):  # on the stack, then one heap buffer within the cap
        args = _spin_args(trips)
        spin_grad[1, 8](*args)
        assert np.allclose(args[3], _reference(trips)), trips
    (prog,) = spin_grad._programs.values()
    assert prog.heap_tape == {"words": None, "initial": 128}  # not checked before
    big = _spin_args(300)
    for _ in range(2):  # the full path, then the fast path of the known launch
        with pytest.raises(dg.LaunchError) as e:
            spin_grad[1, 8](*big)
    msg = str(e.value)
    assert msg.startswith("kernel 'spin_grad': its derivative's tape outgrew the heap's test "
                          f"cap ({switches.TAPE_CAP}={CAP} words a buffer): a thread's tape "
                          "needed a buffer of 512 words (4096 bytes)"), msg
    assert "results are not to be trusted" in msg and "`for` over range(n)" in msg
    args = _spin_args(200)  # the flag was cleared: the next launch is right
    spin_grad[1, 8](*args)
    assert np.allclose(args[3], _reference(200))


def test_one_thread_over_the_cap_fails_the_launch(monkeypatch):
    monkeypatch.setenv(switches.TAPE_CAP, str(CAP))
    _fresh(spin_grad)
    args = _spin_args([10, 20, 30, 40, 5000, 50, 60, 70])  # thread 4: 5,000 words
    with pytest.raises(dg.LaunchError, match="needed a buffer of 512 words"):
        spin_grad[1, 8](*args)
    ok = _spin_args([10, 20, 30, 40, 250, 50, 60, 70])
    spin_grad[1, 8](*ok)
    assert np.allclose(ok[3], _reference([10, 20, 30, 40, 250, 50, 60, 70]))


def test_without_the_cap_the_same_tape_is_right(monkeypatch):
    monkeypatch.delenv(switches.TAPE_CAP, raising=False)
    _fresh(spin_grad)
    args = _spin_args(3000)  # 3,000 words: five heap buffers, up to 4,096 words
    spin_grad[1, 8](*args)
    assert np.allclose(args[3], _reference(3000))


def test_vjp_raises(monkeypatch):
    monkeypatch.setenv(switches.TAPE_CAP, str(CAP))
    out, _, x, _, n = _spin_args(300)
    with pytest.raises(dg.LaunchError, match="kernel 'spin.*tape outgrew the heap's test cap"):
        dg.vjp(spin[1, 8], out, x, n, cotangents={"out": np.ones(8)})
    g = dg.vjp(spin[1, 8], out, x, n * 0 + 200, cotangents={"out": np.ones(8)})
    assert np.allclose(g["x"], _reference(200))


def test_a_formula_tape_that_passes_the_check_is_caught_too(monkeypatch):
    """`for t in range(n)`: checked before the launch against the 1 GiB CPU
    limit (it fits), then its buffer cannot grow past the cap: the same
    error after the launch."""
    monkeypatch.setenv(switches.TAPE_CAP, str(CAP))
    monkeypatch.delenv(LC.HEAP_ENV, raising=False)
    _fresh(scan_written_grad)
    r = np.random.default_rng(1)
    a = r.uniform(-1, 1, (16, 301))
    with pytest.raises(dg.LaunchError, match="kernel 'scan_written_grad'.* 512 words"):
        scan_written_grad[1, 16](a, np.zeros_like(a), r.uniform(-1, 1, 16), np.ones(16), 300)
    a = r.uniform(-1, 1, (16, 201))
    scan_written_grad[1, 16](a, np.zeros_like(a), r.uniform(-1, 1, 16), np.ones(16), 200)


def test_the_cap_is_part_of_the_cache_key_and_checked(monkeypatch):
    from diffgpu.runtime.store import cache
    from diffgpu.types import ArrayType

    types = (ArrayType("float64", 1),) * 4 + (ArrayType("int32", 1),)
    monkeypatch.delenv(switches.TAPE_CAP, raising=False)
    plain = cache.cache_key(spin_grad, types, "host")
    monkeypatch.setenv(switches.TAPE_CAP, "256")
    capped = cache.cache_key(spin_grad, types, "host")
    monkeypatch.setenv(switches.TAPE_CAP, "512")
    assert len({plain, capped, cache.cache_key(spin_grad, types, "host")}) == 3
    monkeypatch.setenv(switches.TAPE_CAP, "lots")
    _fresh(spin_grad)
    with pytest.raises(dg.DiffgpuError, match="DIFFGPU_TAPE_CAP_WORDS must be a positive"):
        spin_grad[1, 8](*_spin_args(10))


def _sm90(kernel, types):
    return dg.compile(kernel, types, target="sm_90").program_for(None)


def test_which_gpu_programs_read_the_flag(monkeypatch):
    """sm_90, no GPU needed: a GPU program reads its overflow flag after a
    launch when its tape has no formula, or once a launch's tape reached
    the heap (runtime/launch_checks.py); its PTX declares the flag."""
    from diffgpu.runtime import gpu
    from diffgpu.runtime.args import Signature

    monkeypatch.delenv(switches.TAPE_CAP, raising=False)
    monkeypatch.setattr(gpu, "heap_room", lambda device: (1 << 30, 1 << 20))
    p = _sm90(spin_grad, ("float64[:]",) * 4 + ("int32[:]",))
    assert ".visible .global .align 8 .b8 __dg_tape_overflow[8];" in p.gpu.ptx
    assert p.heap_tape["words"] is None and p.gpu.watching
    p = _sm90(scan_written_grad, ("float64[:, :]", "float64[:, :]", "float64[:]",
                                  "float64[:]", "int64"))
    assert not p.gpu.watching  # a formula: watched once a launch reaches the heap
    sig = Signature(p.flat_types, "gpu", 0)
    LC.check_heap(p, _copies_of(100), (1, 1, 1), (64, 1, 1), sig)  # 100 words: the stack
    assert not p.gpu.watching
    LC.check_heap(p, _copies_of(300), (1, 1, 1), (64, 1, 1), sig)
    assert p.gpu.watching
    p.gpu.watching = False
    p.gpu.ptx = p.gpu.ptx.replace("__dg_tape_overflow", "something_else")
    p.gpu.watch_tape()  # PTX without the flag (none to read)
    assert not p.gpu.watching


def _copies_of(n, threads=64):
    a = np.zeros((threads, n + 1))
    return [a, a.copy(), np.zeros(threads), np.ones(threads), n]


def test_a_watched_gpu_program_reads_the_flag_after_every_launch(monkeypatch):
    """The packed launch of a watched program (what the fast path and
    dg.vjp's replay call again directly) reads the flag after each launch;
    an unwatched one is the loaded function itself. A stand-in function and
    flag reader: no GPU needed."""
    from diffgpu.runtime import gpu
    from diffgpu.types import ScalarType

    runs, reads = [], []

    class Ready:  # runtime/fastpath.py's, as launch_cached uses it
        packed, seen, grid, block = None, True, (1, 1, 1), (64, 1, 1)

    def fn(grid, block, values):
        runs.append(values)

    for watched in (False, True):
        runs.clear(), reads.clear()
        p = gpu.GpuProgram(".visible .global .align 8 .b8 __dg_tape_overflow[8];\n", "k")
        p.watching = watched
        p._fns[0], p._cuda = fn, (lambda: 0, None)
        monkeypatch.setattr(p, "check_tape", lambda device_id: reads.append(device_id))
        ready = Ready()
        for _ in range(2):
            p.launch_cached(ready, (5,), (ScalarType("int64"),), 0)
        kept = ready.packed[0]
        kept((1, 1, 1), (64, 1, 1), ready.packed[1])  # as hostdiff/replay.py calls it
        assert len(runs) == 3 and reads == ([0, 0, 0] if watched else [])
        assert (kept is fn) is not watched


def test_the_gpu_flag_read(monkeypatch):
    """runtime/gpu.py `check_tape` on a stand-in CuPy: 8 bytes copied on the
    launch's stream and one sync; a non-zero word is cleared and raised (the
    kernel, the words, the heap); nothing is read while a CUDA graph is
    being captured."""
    import contextlib
    import ctypes
    import types

    from diffgpu.runtime import gpu

    log = []

    class Flag:  # the MemoryPointer of the module's flag
        word = 0

        def copy_to_host_async(self, dst, size, stream):
            log.append(("copy", size))
            ctypes.c_int64.from_address(dst).value = self.word

        def memset_async(self, value, size, stream):
            log.append(("memset", value, size))
            self.word = value

    class Stream:
        capturing = False

        def is_capturing(self):
            return self.capturing

        def synchronize(self):
            log.append(("sync",))

    flag, stream = Flag(), Stream()
    cuda = types.SimpleNamespace(Device=lambda d: contextlib.nullcontext(),
                                 get_current_stream=lambda: stream)
    monkeypatch.setattr(gpu, "cupy_module", lambda: types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(gpu, "_flag_of", lambda ptx, entry, device_id: flag)
    monkeypatch.setattr(gpu, "heap_room", lambda device_id: (1 << 30, 1 << 20))
    p = gpu.GpuProgram(".visible .global .align 8 .b8 __dg_tape_overflow[8];\n", "e", name="walk")
    p.check_tape(0)
    assert log == [("copy", 8), ("sync",)]
    flag.word = 1 << 21
    log.clear()
    with pytest.raises(dg.LaunchError, match=r"kernel 'walk': its derivative's tape outgrew the "
                                             r"GPU's malloc heap of 1073741824 bytes: a "
                                             r"thread's tape needed a buffer of 2097152 words"):
        p.check_tape(0)
    assert log == [("copy", 8), ("sync",), ("memset", 0, 8), ("sync",)] and flag.word == 0
    stream.capturing, flag.word = True, 5
    log.clear()
    p.check_tape(0)
    assert log == [] and flag.word == 5
