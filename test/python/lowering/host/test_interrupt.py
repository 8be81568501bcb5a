"""Ctrl-C stops a host launch: a kernel stuck in an endless `while` (or a
long `for` of runtime trip count, or a grid of any size) raises
KeyboardInterrupt, and the next launch in the same process works; Ctrl-C
during a compile stops it between two passes, leaving the cache as it was.

Each case runs in a subprocess that signals itself (the test process's own
SIGINT handling stays untouched). Nothing here measures time: the kernels
interrupted never end by themselves (a launch that is not stopped runs into
the subprocess's timeout, a safety net of minutes), and what ran after the
signal is counted (blocks, pipeline steps, JIT compiles)."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

#: Python's own SIGINT handler first: a shell's background job (`pytest &`)
#: starts with SIGINT ignored, and a child inherits that (its SIGINT would do
#: nothing and the kernel would spin until the timeout). Set in the script,
#: not in a preexec_fn, which would make subprocess fork a process that may
#: run JAX's threads.
SIGINT_DEFAULT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

PRELUDE = SIGINT_DEFAULT + textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    import diffgpu as dg

    def interrupt_after(seconds):
        threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT)).start()

    def interrupt_when(ready, then=lambda: None):
        \"\"\"SIGINT once `ready()` holds (polled by a thread), then `then()`:
        the signal goes to that thread itself, so its handler (which sets a
        running launch's cancel flag) has run when pthread_kill returns.\"\"\"
        def wait():
            while not ready():
                time.sleep(0.001)
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            then()
        threading.Thread(target=wait, daemon=True).start()

    def expect_interrupt(run):
        interrupt_after(0.5)
        try:
            run()
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        else:
            print("NOT INTERRUPTED", flush=True)
""")


def run_script(tmp_path, body: str, timeout=300, name="script.py"):
    """Run PRELUDE + body as a script file (kernels need a source file)."""
    script = tmp_path / name
    script.write_text(PRELUDE + textwrap.dedent(body))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def interrupted(out: str) -> None:
    lines = [ln for ln in out.splitlines() if ln.startswith(("INTERRUPTED", "NOT"))]
    assert lines and lines[0].startswith("INTERRUPTED"), out


def test_endless_while_then_next_launch(tmp_path):
    out = run_script(tmp_path, """
        @dg.kernel
        def spin(x, y):
            i = dg.global_id(0)
            k = 0
            while x[i] < 1.0:
                k += 1
            y[i] = x[i] * 2.0 + k

        x = np.zeros(64, np.float32); y = np.zeros(64, np.float32)
        spin[2, 32](np.full(64, 3.0, np.float32), y)   # compiled, finite
        expect_interrupt(lambda: spin[2, 32](x, y))
        x[:] = np.arange(64) + 1.0
        spin[2, 32](x, y)
        assert np.array_equal(y, x * 2.0), y
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    assert "NEXT OK" in out


def test_long_runtime_for_loop(tmp_path):
    out = run_script(tmp_path, """
        @dg.kernel
        def count(y, n):
            i = dg.global_id(0)
            s = 0.0
            for k in range(n):
                s += 1.0
            y[i] = s

        y = np.zeros(4, np.float64)
        count[1, 4](y, 3)
        expect_interrupt(lambda: count[1, 4](y, 10**15))
        count[1, 4](y, 5)
        assert np.all(y == 5.0), y
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    assert "NEXT OK" in out


def test_endless_loop_with_barrier_in_loop(tmp_path):
    """Block-level loops of the barrier lowering stop too."""
    out = run_script(tmp_path, """
        @dg.kernel
        def spin_sync(x):
            t = dg.thread_id(0)
            while x[0] < 1.0:
                x[t + 1] += 1.0
                dg.syncthreads()

        x = np.zeros(17, np.float64); x[0] = 2.0
        spin_sync[1, 16](x)
        x[0] = 0.0
        expect_interrupt(lambda: spin_sync[1, 16](x))
        x[:] = 0.0; x[0] = 2.0
        spin_sync[1, 16](x)
        assert np.all(x[1:] == 0.0)
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    assert "NEXT OK" in out


def test_huge_grid_stops_at_the_flag(tmp_path):
    """A grid of 2**31-1 x 65535 x 65535 slow blocks: after the signal at
    most the running block ends; the block loops do not step through the
    rest (which would never end: they used to ask the flag per block)."""
    out = run_script(tmp_path, """
        @dg.kernel
        def slow(count, n):
            s = 0.0
            for k in range(n):
                s += 1.0
            if dg.thread_id(0) == 0:
                count[0] += 1
            count[1] = s

        from diffgpu.driver.launch import STATS
        count = np.zeros(2, np.int64)
        slow[(3, 2, 2), 2](count, 10)  # compiled: the same launch facts as below
        assert count[0] == 12, count
        count[:] = 0
        loaded = STATS["compile"] + STATS["disk_hit"]
        at_signal = []
        interrupt_when(lambda: count[0] >= 3, lambda: at_signal.append(int(count[0])))
        try:
            slow[(2**31 - 1, 65535, 65535), 2](count, 10**6)
            print("NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        print("BLOCKS", at_signal[0], int(count[0]), flush=True)
        assert STATS["compile"] + STATS["disk_hit"] == loaded  # the program of (3, 2, 2)
        slow[1, 8](count, 3)
        assert count[1] == 3.0
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    at_signal, total = (int(v) for v in out.split("BLOCKS")[1].split()[:2])
    # the block running when the flag was set may still count itself
    assert 3 <= at_signal <= total <= at_signal + 1, (at_signal, total)
    assert "NEXT OK" in out


def test_barrier_in_a_long_for_loop(tmp_path):
    """A `for` holding a barrier becomes a loop of the block: it ends at the
    flag too (it used to run its 10**15 iterations)."""
    out = run_script(tmp_path, """
        @dg.kernel
        def steps(x, n):
            t = dg.thread_id(0)
            for k in range(n):
                x[t] += 1.0
                dg.syncthreads()

        x = np.zeros(16)
        steps[1, 16](x, 3)
        assert np.all(x == 3.0), x
        expect_interrupt(lambda: steps[1, 16](x, 10**15))
        x[:] = 0.0
        steps[1, 16](x, 2)
        assert np.all(x == 2.0), x
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    assert "NEXT OK" in out


def test_ctrl_c_right_after_a_compile_cancels(tmp_path):
    """The compile of a launch holds Ctrl-C back with a handler of its own;
    ours is back before the kernel runs, so a Ctrl-C right away cancels it
    (it used to reach Python only until the watcher thread's next round, and
    the endless kernel then never returned)."""
    out = run_script(tmp_path, """
        @dg.kernel
        def first(y):
            y[0] = 1.0

        @dg.kernel
        def spin(x, p):
            k = 0
            while x[0] < 1.0:
                k += 1
                p[0] = k

        first[1, 1](np.zeros(1))  # the SIGINT handler is set up
        p = np.zeros(1)
        interrupt_when(lambda: p[0] > 0)
        try:
            spin[1, 1](np.zeros(1), p)  # compiles, then spins
            print("NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        spin[1, 1](np.full(1, 2.0), p)
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    assert "NEXT OK" in out


def test_other_threads_call_directly(tmp_path):
    """Launches from a non-main thread run there (no worker hop) and work."""
    out = run_script(tmp_path, """
        @dg.kernel
        def add1(y):
            i = dg.global_id(0)
            if i < len(y):
                y[i] += 1.0

        y = np.zeros(10, np.float32)
        t = threading.Thread(target=lambda: add1[1, 16](y)); t.start(); t.join()
        add1[1, 16](y)
        assert np.all(y == 2.0), y
        print("OK", flush=True)
    """)
    assert "OK" in out


SPIN = """
    @dg.kernel
    def spin(x, y):
        i = dg.global_id(0)
        k = 0
        while x[i] < 1.0:
            k += 1
        y[i] = x[i] * 2.0 + k

    x = np.zeros(64, np.float32); y = np.zeros(64, np.float32)
    spin[2, 32](np.full(64, 3.0, np.float32), y)
"""


def test_python_sigint_handling_is_kept(tmp_path):
    """Between launches Ctrl-C is Python's as before; the Python-level
    handler is unchanged."""
    out = run_script(tmp_path, textwrap.dedent(SPIN) + textwrap.dedent("""
        expect_interrupt(lambda: spin[2, 32](x, y))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        expect_interrupt(lambda: time.sleep(20))
        print("OK", flush=True)
    """))
    assert out.count("INTERRUPTED") == 2 and "OK" in out, out


def test_custom_handler_runs_and_launch_still_stops(tmp_path):
    """A user handler that does not raise is called; the cut-short launch
    raises KeyboardInterrupt itself (its results are incomplete)."""
    out = run_script(tmp_path, textwrap.dedent(SPIN) + textwrap.dedent("""
        calls = []
        signal.signal(signal.SIGINT, lambda s, f: calls.append(s))
        expect_interrupt(lambda: spin[2, 32](x, y))
        assert calls == [signal.SIGINT], calls
        print("OK", flush=True)
    """))
    interrupted(out)
    assert "OK" in out


def test_ignored_sigint_does_not_cancel(tmp_path):
    out = run_script(tmp_path, textwrap.dedent(SPIN) + textwrap.dedent("""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        x[:] = 5.0
        os.kill(os.getpid(), signal.SIGINT)
        spin[2, 32](x, y)
        assert np.all(y == 10.0)
        print("OK", flush=True)
    """))
    assert "OK" in out


def test_worker_thread_fallback(tmp_path):
    """Where the SIGINT handler cannot be installed, a worker thread runs
    the launch and the main thread waits interruptibly."""
    out = run_script(tmp_path, textwrap.dedent(SPIN) + textwrap.dedent("""
        from diffgpu.runtime import host_signal
        host_signal._S.ready, host_signal._S.slot = False, None  # as if unavailable
        expect_interrupt(lambda: spin[2, 32](x, y))
        x[:] = np.arange(64) + 1.0
        spin[2, 32](x, y)
        assert np.array_equal(y, x * 2.0), y
        print("NEXT OK", flush=True)
    """))
    interrupted(out)
    assert "NEXT OK" in out


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3])
def test_ctrl_c_during_the_first_compile(tmp_path, delay):
    """Ctrl-C while the first launch imports MLIR and compiles: the step
    finishes first (an interrupted import or pass manager crashed the
    process later), then KeyboardInterrupt; the next launch works."""
    env_cache = tmp_path / "cache"
    out = run_script(tmp_path, f"""
        os.environ["DIFFGPU_CACHE_DIR"] = {str(env_cache)!r}
        @dg.kernel
        def k(x, out):
            i = dg.global_id(0)
            if i < len(x):
                out[i] = x[i] * 2.0 + dg.sin(x[i]) * dg.exp(x[i])

        x = np.ones(4); out = np.zeros(4)
        timer = threading.Timer({delay}, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        try:
            k[1, 4](x, out)
            # a fast compile may end before the signal: it then lands here
            timer.join()
            time.sleep(0.3)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        time.sleep(0.3)
        k[1, 4](x, out)
        assert np.allclose(out, 2.0 + np.sin(1.0) * np.exp(1.0))
        print("NEXT OK", flush=True)
    """)
    assert "NEXT OK" in out


LONG_GRADIENT = """
    import diffgpu as dg

    @dg.kernel
    def k(Y, X):
        s = 0.0
{body}
        Y[0] = s

    @dg.kernel
    def grad(Y, dY, X, dX):
        dg.autodiff(k, dg.Duplicated(Y, dY), dg.Duplicated(X, dX))
"""

GRADIENT_RUN = """
    os.environ["DIFFGPU_CACHE_DIR"] = {cache!r}
    sys.path.insert(0, {here!r})
    from diffgpu.driver import compiler, launch
    from diffgpu.runtime.store import cache
    from diffgpu.runtime.store.cache_dir import FORMAT_DIR
    from diffgpu.runtime.cpu import HostProgram
    import long_gradient

    jits = [0]  # kernel programs JIT-compiled
    _loaded = HostProgram._from_loaded.__func__
    def counted(cls, *args, **kwargs):
        jits[0] += 1
        return _loaded(cls, *args, **kwargs)
    HostProgram._from_loaded = classmethod(counted)

    def files():
        where = os.path.join(os.environ["DIFFGPU_CACHE_DIR"], FORMAT_DIR)
        return sorted(os.listdir(where)) if os.path.isdir(where) else []

    def run_gradient():
        y, dy, x, dx = np.zeros(1), np.ones(1), np.arange(16.0) / 16, np.zeros(16)
        long_gradient.grad[1, 1](y, dy, x, dx)
        want = np.zeros(16)
        for i in range({n}):
            want[i % 16] += (i + 1) * 0.5 ** ({n} - 1 - i)
        assert np.allclose(dx, want, rtol=1e-12, atol=0), (dx, want)
"""


def test_ctrl_c_during_a_long_compile(tmp_path):
    """Ctrl-C while a generated gradient compiles: KeyboardInterrupt before
    the next pass (no JIT, nothing stored: it used to compile to the end
    first); the next launch compiles it and runs right, its cache entry is
    whole, and a new process loads it from the cache."""
    n = 300
    body = "\n".join(f"        s = s * 0.5 + X[{i % 16}] * {float(i + 1)!r}" for i in range(n))
    (tmp_path / "long_gradient.py").write_text(textwrap.dedent(LONG_GRADIENT.format(body=body)))
    cache_dir = str(tmp_path / "cache")
    run = textwrap.dedent(GRADIENT_RUN.format(cache=cache_dir, here=str(tmp_path), n=n))
    out = run_script(tmp_path, run + textwrap.dedent("""
        main = threading.main_thread().ident
        def in_passes():  # the main thread runs the pass pipeline
            f = sys._current_frames().get(main)
            while f is not None and f.f_code.co_name != "run_passes":
                f = f.f_back
            return f is not None
        interrupt_when(in_passes)
        try:
            run_gradient()
            print("NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        total = len(compiler.pipeline_elements(compiler.full_pipeline("host")))
        print("WORK", jits[0], launch.STATS["compile"], compiler.STATS["steps"], total,
              files(), flush=True)
        run_gradient()
        assert launch.STATS["compile"] == 1 and jits[0] == 1, (launch.STATS, jits)
        entries = [f for f in files() if f.endswith(cache.SUFFIX)]
        assert len(entries) == 1 and files() == entries, files()
        with open(os.path.join(os.environ["DIFFGPU_CACHE_DIR"], FORMAT_DIR, entries[0]),
                  "rb") as f:
            assert cache.decode_entry(f.read())["name"] == "grad"
        print("NEXT OK", flush=True)
    """))
    interrupted(out)
    jits, compiles, steps, total, *left = out.split("WORK")[1].split("\n")[0].split(maxsplit=4)
    assert (int(jits), int(compiles)) == (0, 0), out  # stopped before the JIT, nothing stored
    assert int(steps) < int(total), out
    assert left == ["[]"], out  # no entry, no temporary file
    assert "NEXT OK" in out
    again = run_script(tmp_path, run + textwrap.dedent("""
        run_gradient()
        assert (launch.STATS["compile"], launch.STATS["disk_hit"]) == (0, 1), launch.STATS
        print("CACHED OK", flush=True)
    """), name="again.py")
    assert "CACHED OK" in again


def test_ctrl_c_while_the_cache_entry_is_written(tmp_path):
    """A Ctrl-C while a compiled program is stored: the entry and the cache's
    size ledger are written first, then KeyboardInterrupt (it used to come
    in between: the ledger missed the entry)."""
    out = run_script(tmp_path, f"""
        root = {str(tmp_path / "cache")!r}
        os.environ["DIFFGPU_CACHE_DIR"] = root
        from diffgpu.runtime.store import cache

        @dg.kernel
        def one(y):
            y[0] = 1.0

        @dg.kernel
        def two(y):
            y[0] = 2.0

        y = np.zeros(1)
        one[1, 1](y)  # the first entry: the ledger counts from here on
        write = cache._write_new
        def write_then_ctrl_c(*args):
            write(*args)
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler runs right after
        cache._write_new = write_then_ctrl_c
        try:
            two[1, 1](y)
            print("NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
        cache._write_new = write
        sub = os.path.join(root, "v1")
        sizes = sum(os.path.getsize(os.path.join(sub, f)) for f in os.listdir(sub))
        with open(sub + ".lock") as f:
            print("LEDGER", f.read().strip(), sizes, len(os.listdir(sub)), flush=True)
        two[1, 1](y)
        assert y[0] == 2.0
        print("NEXT OK", flush=True)
    """)
    interrupted(out)
    ledger, sizes, entries = out.split("LEDGER")[1].split()[:3]
    assert entries == "2" and ledger == sizes, out
    assert "NEXT OK" in out


def test_own_handler_raising_during_a_compile(tmp_path):
    """A SIGINT handler of the user's that raises its own exception: held
    back during the compile, it is raised unchanged at the next pass (it
    used to become an 'internal compiler error' CompileError)."""
    out = run_script(tmp_path, """
        class Stop(Exception):
            pass

        def stop(sig, frame):
            raise Stop("user stop")

        @dg.kernel
        def k(x, out):
            i = dg.global_id(0)
            if i < len(x):
                out[i] = dg.sin(x[i]) * dg.exp(x[i])

        main = threading.main_thread().ident
        def in_passes():
            f = sys._current_frames().get(main)
            while f is not None and f.f_code.co_name != "run_passes":
                f = f.f_back
            return f is not None
        signal.signal(signal.SIGINT, stop)
        interrupt_when(in_passes)
        x, out = np.ones(4), np.zeros(4)
        try:
            k[1, 4](x, out)
            print("NOT STOPPED", flush=True)
        except Stop as exc:
            print("STOPPED", exc, flush=True)
        except dg.CompileError as exc:
            print("COMPILE ERROR", exc, flush=True)
        k[1, 4](x, out)
        assert np.allclose(out, np.sin(1.0) * np.exp(1.0))
        print("NEXT OK", flush=True)
    """)
    assert "STOPPED user stop" in out and "NEXT OK" in out, out
