"""Interruptible host launches where no SIGINT handler of ours can be
installed (runtime/host_signal.py is the usual way): a worker thread.

A JIT-compiled entry called through ctypes holds the calling thread until it
returns, and Python runs its SIGINT handler only between bytecodes. Here a
launch from the main thread runs in one persistent worker thread (ctypes
releases the GIL during the call) while the main thread waits on a lock,
which a signal interrupts. On any exception there (KeyboardInterrupt, or
whatever a signal handler raises) the main thread sets the program's cancel
flag, waits for the worker to return (the generated loops and the block loop
check the flag, see lowering/host/cancel.py), clears the flag and re-raises.
The arrays then hold what the threads wrote before the interruption; the
next launch runs normally. The hand-over costs two thread switches per
launch, which is why it is only the fallback.

    run(fn, packed, flag)   # flag: ctypes.c_int64 at the module's global
"""
from __future__ import annotations

import queue
import threading

_jobs: queue.SimpleQueue = queue.SimpleQueue()
_worker: threading.Thread | None = None
_start_lock = threading.Lock()


def _serve() -> None:
    while True:
        fn, packed, done, box = _jobs.get()
        try:
            fn(packed)
        except BaseException as exc:  # reported to the launching thread
            box.append(exc)
        finally:
            done.release()


def _ensure_worker() -> None:
    global _worker
    with _start_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_serve, name="diffgpu-host-launch", daemon=True)
            _worker.start()


def run(fn, packed, flag) -> None:
    """Call `fn(packed)`; interruptible from the main thread when `flag` exists."""
    if flag is None or threading.current_thread() is not threading.main_thread():
        fn(packed)
        return
    _ensure_worker()
    done = threading.Lock()
    done.acquire()
    box: list = []
    _jobs.put((fn, packed, done, box))
    try:
        done.acquire()
    except BaseException:
        flag.value = 1  # the generated loops end, the remaining blocks are skipped
        _wait(done)
        flag.value = 0
        raise
    if box:
        raise box[0]


def _wait(done) -> None:
    """Wait for the worker to return, through further interruptions: the
    launch's arrays must stay alive until it has."""
    while True:
        try:
            done.acquire()
            return
        except BaseException:
            continue
