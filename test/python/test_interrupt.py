"""Ctrl-C stops a host launch: a kernel stuck in an endless `while` (or a
long `for` of runtime trip count) raises KeyboardInterrupt within about a
second of SIGINT, and the next launch in the same process works.

Each case runs in a subprocess that signals itself after 0.5 s (the test
process's own SIGINT handling stays untouched)."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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

    def expect_interrupt(run):
        interrupt_after(0.5)
        t0 = time.monotonic()
        try:
            run()
        except KeyboardInterrupt:
            print(f"INTERRUPTED {time.monotonic() - t0 - 0.5:.3f}", flush=True)
        else:
            print("NOT INTERRUPTED", flush=True)
""")


def run_script(tmp_path, body: str, timeout=120):
    """Run PRELUDE + body as a script file (kernels need a source file)."""
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def interrupted_within(out: str, limit=2.0) -> float:
    lines = [ln for ln in out.splitlines() if ln.startswith(("INTERRUPTED", "NOT"))]
    assert lines and lines[0].startswith("INTERRUPTED"), out
    delay = float(lines[0].split()[1])
    assert delay < limit, f"KeyboardInterrupt {delay:.2f} s after SIGINT"
    return delay


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
    interrupted_within(out)
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
    interrupted_within(out)
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
    interrupted_within(out)
    assert "NEXT OK" in out


def test_many_blocks_are_skipped(tmp_path):
    """A grid of many slow blocks: the remaining blocks are skipped."""
    out = run_script(tmp_path, """
        @dg.kernel
        def slow(y, n):
            i = dg.global_id(0)
            s = 0.0
            for k in range(n):
                s += 1.0
            if i < len(y):
                y[i] = s

        y = np.zeros(8, np.float64)
        slow[1, 8](y, 2)
        expect_interrupt(lambda: slow[2**30, 1](y, 100000))
        slow[1, 8](y, 3)
        assert np.all(y == 3.0)
        print("NEXT OK", flush=True)
    """)
    interrupted_within(out)
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
    interrupted_within(out)
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
    interrupted_within(out)
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
