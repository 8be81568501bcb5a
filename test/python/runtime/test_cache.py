"""The on-disk cache: keys, entry integrity, atomic writes, concurrency, and
GPU cache hits that never import MLIR."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.driver.launch import STATS, get_program
from diffgpu.runtime.store import cache
from diffgpu.types import ArrayType, ScalarType

F32 = (ArrayType("float32", 1), ArrayType("float32", 1), ScalarType("float64"))

AXPY = """
import diffgpu as dg

SCALE = {scale}
SHAPE = (4, {rows})

@dg.func
def twice(x):
    return {twice}

@dg.kernel
def axpy(A, B, a):
    i = dg.global_id(0)
    if i < len(A):
        A[i] = A[i] + a * twice(B[i]) * SCALE * (SHAPE[0] // 4)
"""


def load(tmp_path, name, scale=1.0, twice="2.0 * x", rows=4):
    path = tmp_path / f"{name}.py"
    path.write_text(AXPY.format(scale=scale, twice=twice, rows=rows))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(d))
    return d


# --- keys (no compiler involved) -------------------------------------------

def test_key_same_source_same_key(tmp_path):
    # two loads of the same source (different modules) share entries
    a, b = load(tmp_path, "m_a"), load(tmp_path, "m_b")
    assert cache.cache_key(a.axpy, F32, "host") == cache.cache_key(b.axpy, F32, "host")


def test_key_covers_callees_constants_types_target_diff(tmp_path):
    # a change in a callee, a module constant, the types, the target or the
    # diff mode gives a different key
    base = load(tmp_path, "k_base")
    key = cache.cache_key(base.axpy, F32, "host")
    others = [
        cache.cache_key(load(tmp_path, "k_callee", twice="x + x").axpy, F32, "host"),
        cache.cache_key(load(tmp_path, "k_const", scale=3.0).axpy, F32, "host"),
        cache.cache_key(load(tmp_path, "k_tuple", rows=8).axpy, F32, "host"),
        cache.cache_key(base.axpy, F32[:2] + (ScalarType("float32"),), "host"),
        cache.cache_key(base.axpy, F32, "sm_90"),
        cache.cache_key(base.axpy, F32, "host", ("reverse", ("dup", "const", "active"))),
    ]
    assert len(set(others + [key])) == len(others) + 1


def test_key_does_not_import_mlir():
    # computing a key and reading entries never imports MLIR
    code = textwrap.dedent("""
        import sys
        sys.modules['mlir'] = None
        import diffgpu as dg
        from diffgpu.runtime.store import cache
        from diffgpu.types import ArrayType
        @dg.kernel
        def k(A):
            A[0] = 1.0
        print(cache.cache_key(k, (ArrayType('float32', 1),), 'sm_90'))
        print(cache.load('0' * 64))
        assert not [m for m in sys.modules if m.startswith('mlir') and sys.modules[m]]
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    key, none = out.stdout.split()
    assert len(key) == 64 and none == "None"


def test_import_diffgpu_does_not_import_mlir():
    code = ("import sys; import diffgpu as dg; dg.thread_id; dg.kernel; "
            "print(sorted(m for m in sys.modules if m == 'mlir' or m.startswith('mlir.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_cache_dir_default(monkeypatch, tmp_path):
    # DIFFGPU_CACHE_DIR wins; else $XDG_CACHE_HOME/diffgpu; else ~/.cache/diffgpu
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / "a"))
    assert cache.cache_dir() == str(tmp_path / "a")
    monkeypatch.delenv("DIFFGPU_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_dir() == str(tmp_path / "x" / "diffgpu")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert cache.cache_dir() == str(tmp_path / "h" / ".cache" / "diffgpu")


# --- entries ---------------------------------------------------------------

def test_entry_round_trip_and_corruption(cache_dir):
    # an intact entry loads; truncated, bit-flipped, re-keyed or garbage ones do not
    key = "a" * 64
    path = cache.store(key, {"kind": "gpu", "ptx": "// ptx\n" * 100})
    assert cache.load(key)["ptx"] == "// ptx\n" * 100
    data = open(path, "rb").read()
    bad = {
        "truncated": data[:-10],
        "header only": data[:data.index(b"\n") + 1],
        "flipped": data[:-5] + bytes([data[-5] ^ 1]) + data[-4:],
        "empty": b"",
        "garbage": b"\x00\xff" * 50,
    }
    for what, blob in bad.items():
        with open(path, "wb") as f:
            f.write(blob)
        assert cache.load(key) is None, what
    # an intact entry stored under another key is not trusted either
    other = cache.store("b" * 64, {"kind": "gpu"})
    os.replace(other, path)
    assert cache.load(key) is None


def test_store_is_atomic(cache_dir, monkeypatch):
    # a write that fails half-way leaves the previous entry intact and no
    # temporary file behind
    key = "c" * 64
    cache.store(key, {"v": 1})

    def boom(src, dst, **dir_fds):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.warns(RuntimeWarning, match="disk full"):
        assert cache.store(key, {"v": 2}) is None
    assert cache.load(key)["v"] == 1
    assert os.listdir(os.path.dirname(cache.entry_path(key))) == [key + cache.SUFFIX]


# --- with the compiler -----------------------------------------------------

def run_axpy(axpy):
    A = np.arange(8, dtype=np.float32)
    B = np.ones(8, np.float32)
    axpy[2, 4](A, B, 0.5)
    return A


def test_disk_hit_and_corrupt_entry_recompiled(tmp_path, cache_dir):
    # a second kernel object with the same source hits the disk; after the
    # entry is truncated it is recompiled (and rewritten), never trusted
    expect = np.arange(8, dtype=np.float32) + 1.0
    c0 = STATS["compile"]
    assert np.array_equal(run_axpy(load(tmp_path, "d1").axpy), expect)
    assert STATS["compile"] == c0 + 1
    (entry,) = (cache_dir / "v1").iterdir()
    h0 = STATS["disk_hit"]
    assert np.array_equal(run_axpy(load(tmp_path, "d2").axpy), expect)
    assert STATS["compile"] == c0 + 1 and STATS["disk_hit"] == h0 + 1
    entry.write_bytes(entry.read_bytes()[:-100])
    assert np.array_equal(run_axpy(load(tmp_path, "d3").axpy), expect)
    assert STATS["compile"] == c0 + 2
    assert cache.decode_entry(entry.read_bytes()) is not None


def test_unwritable_cache_dir_still_runs(tmp_path, monkeypatch):
    # a cache directory that cannot be created is a warning, not an error
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(blocker / "sub"))
    with pytest.warns(RuntimeWarning, match="cannot write cache entry"):
        A = run_axpy(load(tmp_path, "u1").axpy)
    assert np.array_equal(A, np.arange(8, dtype=np.float32) + 1.0)


def test_unwritable_cache_dir_warns_once_at_the_user_line(tmp_path, monkeypatch):
    # three kernels that cannot be cached give one warning, naming the line
    # of this file that launched the first, not a line inside diffgpu
    import warnings
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(blocker / "sub"))
    mods = [load(tmp_path, f"w{k}", scale=k + 1.0) for k in range(3)]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for mod in mods:
            mod.axpy[2, 4](np.zeros(8, np.float32), np.ones(8, np.float32), 0.5)
            line = sys._getframe().f_lineno - 1
    cache_warnings = [w for w in got if "cache" in str(w.message)]
    assert len(cache_warnings) == 1, [str(w.message) for w in got]
    (w,) = cache_warnings
    assert "cannot write cache entry" in str(w.message)
    assert w.filename == __file__ and w.lineno == line, (w.filename, w.lineno)


def test_concurrent_threads_compile_once(tmp_path, cache_dir):
    # threads launching one new signature at once all succeed, one compile
    mod = load(tmp_path, "t1")
    c0 = STATS["compile"]
    results, errors = [], []

    def work():
        try:
            results.append(run_axpy(mod.axpy))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 4 and all(np.array_equal(r, results[0]) for r in results)
    assert STATS["compile"] == c0 + 1


def test_concurrent_processes(tmp_path, cache_dir):
    # processes compiling the same kernel into one cache directory all succeed
    load(tmp_path, "p1")  # writes p1.py
    code = textwrap.dedent(f"""
        import importlib.util, numpy as np
        spec = importlib.util.spec_from_file_location('p1', {str(tmp_path / 'p1.py')!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        A = np.arange(8, dtype=np.float32); B = np.ones(8, np.float32)
        m.axpy[2, 4](A, B, 0.5)
        assert np.array_equal(A, np.arange(8, dtype=np.float32) + 1.0), A
        print('ok')
        """)
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
    entries = list((cache_dir / "v1").iterdir())
    assert len(entries) == 1 and cache.decode_entry(entries[0].read_bytes()) is not None


def test_gpu_cache_hit_without_mlir(tmp_path, cache_dir):
    # PTX compiled here (no GPU needed) is loaded by a process where importing
    # MLIR fails: the entry is read, checked and turned into a GPU program
    # without the compiler; only the CuPy launch itself is left
    mod = load(tmp_path, "g1")
    types = (ArrayType("float32", 1), ArrayType("float32", 1), ScalarType("float64"))
    prog = get_program(mod.axpy, types, "sm_90")
    assert ".entry axpy" in prog.payload["ptx"] or ".entry\taxpy" in prog.payload["ptx"]
    code = textwrap.dedent(f"""
        import sys
        sys.modules['mlir'] = None          # any import of mlir now fails
        import importlib.util
        from diffgpu.driver.launch import STATS, get_program
        from diffgpu.types import ArrayType, ScalarType
        spec = importlib.util.spec_from_file_location('g1', {str(tmp_path / 'g1.py')!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        types = (ArrayType('float32', 1), ArrayType('float32', 1), ScalarType('float64'))
        prog = get_program(m.axpy, types, 'sm_90')
        assert STATS['disk_hit'] == 1 and STATS['compile'] == 0, STATS
        assert prog.kind == 'gpu' and prog.gpu.entry == 'axpy'
        assert 'axpy' in prog.gpu.ptx
        from diffgpu.runtime.gpu import check_abi
        check_abi(prog.gpu.meta, prog.flat_types)
        assert 'diffgpu.frontend' not in sys.modules   # the hit needs no compiler
        try:
            get_program(m.axpy, types[:2] + (ScalarType('float32'),), 'sm_90')
        except Exception as exc:
            print(type(exc).__name__, exc)
        print('hit')
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, DIFFGPU_CACHE_DIR=str(cache_dir)))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "hit"
    # a signature that is not cached says so clearly instead of failing in MLIR
    assert lines[0].startswith("CompileError") and "not in the cache" in lines[0]
    json.loads(json.dumps(prog.payload))  # the payload is plain JSON


FAKE_CUPY = """
import sys, types
calls = []


class Device:
    def __init__(self, i=0):
        self.id, self.compute_capability = i, "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class RawModule:
    def __init__(self, path):
        self.ptx = open(path).read()

    def get_function(self, name):
        assert ".entry " + name in self.ptx
        return lambda grid, block, args: calls.append((name, grid, block, args))


runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0)
cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
cupy = types.ModuleType("cupy")
cupy.cuda, cupy.RawModule, cupy.calls = cuda, RawModule, calls
sys.modules["cupy"] = cupy


class DevArray:
    def __init__(self, ptr, shape, strides, typestr="<f4"):
        self.device = Device(0)
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides,
                                         "typestr": typestr, "data": (ptr, False), "version": 3}
"""


def test_gpu_launch_from_cache_without_mlir(tmp_path, cache_dir):
    # the whole launch path, kernel[grid, block](device arrays), on a cached
    # entry in a process without MLIR; a stand-in CuPy records the kernel
    # arguments: per array the pointer twice, offset 0, sizes, strides in
    # elements; scalars as numpy values of the signature's type
    mod = load(tmp_path, "l1")
    get_program(mod.axpy, F32, "sm_90")
    (tmp_path / "fakecupy.py").write_text(FAKE_CUPY)
    code = textwrap.dedent(f"""
        import sys
        sys.modules['mlir'] = None
        sys.path.insert(0, {str(tmp_path)!r})
        from fakecupy import DevArray, calls
        import importlib.util
        import numpy as np
        from diffgpu.driver.launch import STATS
        spec = importlib.util.spec_from_file_location('l1', {str(tmp_path / 'l1.py')!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        A = DevArray(4096, (4,), (8,))        # every other float32
        B = DevArray(8192, (4,), None)        # C-contiguous
        m.axpy[2, (4, 1)](A, B, 0.5)
        (name, grid, block, args), = calls
        assert (name, grid, block) == ('axpy', (2, 1, 1), (4, 1, 1)), (grid, block)
        assert [int(a) for a in args[:10]] == [4096, 4096, 0, 4, 2, 8192, 8192, 0, 4, 1], args
        assert [type(a).__name__ for a in args] == ['uint64'] * 2 + ['int64'] * 3 + \
            ['uint64'] * 2 + ['int64'] * 3 + ['float64'], args
        assert STATS['disk_hit'] == 1 and STATS['compile'] == 0, STATS
        assert 'diffgpu.frontend' not in sys.modules
        print('launched')
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, DIFFGPU_CACHE_DIR=str(cache_dir)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "launched"
