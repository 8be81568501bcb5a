"""Ctrl-C during a host launch: a SIGINT handler that cancels the kernel.

A JIT-compiled entry called through ctypes holds the main thread until it
returns, and Python runs its SIGINT handler only between bytecodes: an
endless `while` in a kernel could not be stopped. So, around a launch from
the main thread, the process's SIGINT handler is a tiny function of ours
(JIT-compiled once per process from the LLVM dialect, kept alive for good):

    if (slot) *slot = 1;                    // the running program's cancel flag
    if (prev > SIG_IGN) prev(sig);          // then Python's own handler

`slot` holds the address of the cancel flag of the program the main thread
is running (lowering/host/cancel.py: generated loops and the block loops
test it), 0 between launches. Python's handler records the signal as usual,
so KeyboardInterrupt (or the user's handler) runs as soon as the cancelled
launch returns (its loops end at their next check, its block loops at
once). The handler is installed with `sigaction`, keeping Python's flags
and mask, only while Python handles SIGINT itself (not under
SIG_IGN/SIG_DFL). `signal.signal` later replaces it; a watcher thread,
waking every WATCH_S seconds, calls
`@__dg_host_sig_ensure()` (JIT code: checks with `sigaction` that ours is in
place, installs it again if Python's is back) whenever the main thread is in
a launch. A launch itself only clears its flag and sets the slot: two stores,
no system call, no thread switch. (A Ctrl-C in the first WATCH_S seconds of
a launch that follows a `signal.signal` of the user's reaches Python only;
the next one cancels. `deferred_sigint`, which compiles run in, puts ours
back as it ends.)

Launches from other threads (which never receive KeyboardInterrupt), and
programs without a flag (lowered before it existed), call the entry
directly; where `sigaction` has no known layout (not Linux), a worker thread
does the waiting instead (runtime/host_worker.py).
"""
from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
import time

#: seconds between the watcher's checks that our handler is installed
WATCH_S = 0.25

_HANDLER_MODULE = """
llvm.mlir.global internal @slot(0 : i64) {addr_space = 0 : i32} : i64
llvm.mlir.global internal @prev(0 : i64) {addr_space = 0 : i32} : i64
llvm.func @sigaction(i32, !llvm.ptr, !llvm.ptr) -> i32
llvm.func @__dg_host_sigint(%sig: i32) {
  %s = llvm.mlir.addressof @slot : !llvm.ptr
  %p = llvm.load volatile %s {alignment = 8 : i64} : !llvm.ptr -> i64
  %z = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %has = llvm.icmp "ne" %p, %z : i64
  llvm.cond_br %has, ^set, ^chain
^set:
  %fp = llvm.inttoptr %p : i64 to !llvm.ptr
  llvm.store volatile %one, %fp {alignment = 8 : i64} : i64, !llvm.ptr
  llvm.br ^chain
^chain:
  %q = llvm.mlir.addressof @prev : !llvm.ptr
  %h = llvm.load volatile %q {alignment = 8 : i64} : !llvm.ptr -> i64
  %real = llvm.icmp "ugt" %h, %one : i64
  llvm.cond_br %real, ^call, ^done
^call:
  %hp = llvm.inttoptr %h : i64 to !llvm.ptr
  llvm.call %hp(%sig) : !llvm.ptr, (i32) -> ()
  llvm.br ^done
^done:
  llvm.return
}
// ensure(): make sure our handler is installed (keeping the current one's
// flags and mask, chaining to it). 1 if it is, 0 if SIGINT is not Python's
// to handle (SIG_IGN, SIG_DFL) or sigaction failed.
llvm.func @__dg_host_sig_ensure() -> i64 {
  %z = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %sigint = llvm.mlir.constant(2 : i32) : i32
  %n = llvm.mlir.constant(1 : i64) : i64
  %null = llvm.mlir.zero : !llvm.ptr
  %cur = llvm.alloca %n x !llvm.array<19 x i64> {alignment = 8 : i64} : (i64) -> !llvm.ptr
  %rc = llvm.call @sigaction(%sigint, %null, %cur) : (i32, !llvm.ptr, !llvm.ptr) -> i32
  %z32 = llvm.mlir.constant(0 : i32) : i32
  %good = llvm.icmp "eq" %rc, %z32 : i32
  llvm.cond_br %good, ^look, ^off
^look:
  %h = llvm.load %cur {alignment = 8 : i64} : !llvm.ptr -> i64
  %mine = llvm.mlir.addressof @__dg_host_sigint : !llvm.ptr
  %m = llvm.ptrtoint %mine : !llvm.ptr to i64
  %ok = llvm.icmp "eq" %h, %m : i64
  llvm.cond_br %ok, ^on, ^other
^other:
  %real = llvm.icmp "ugt" %h, %one : i64
  llvm.cond_br %real, ^install, ^off
^install:
  %q = llvm.mlir.addressof @prev : !llvm.ptr
  llvm.store volatile %h, %q {alignment = 8 : i64} : i64, !llvm.ptr
  llvm.store %m, %cur {alignment = 8 : i64} : i64, !llvm.ptr
  %rc2 = llvm.call @sigaction(%sigint, %cur, %null) : (i32, !llvm.ptr, !llvm.ptr) -> i32
  %set = llvm.icmp "eq" %rc2, %z32 : i32
  llvm.cond_br %set, ^on, ^off
^on:
  llvm.return %one : i64
^off:
  llvm.return %z : i64
}
llvm.func @addr_slot() -> i64 {
  %s = llvm.mlir.addressof @slot : !llvm.ptr
  %a = llvm.ptrtoint %s : !llvm.ptr to i64
  llvm.return %a : i64
}
llvm.func @addr_ensure() -> i64 {
  %s = llvm.mlir.addressof @__dg_host_sig_ensure : !llvm.ptr
  %a = llvm.ptrtoint %s : !llvm.ptr to i64
  llvm.return %a : i64
}
"""


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.ready = None  # None: not tried; False: unavailable; True
        self.keep = None  # the handler's engine and context: alive for good
        self.slot = None  # ctypes.c_int64 view of the slot, once ready
        self.ensure = None  # ctypes function: ensure() -> 1 if ours is installed
        self.main = threading.main_thread().ident


_S = _State()


def _call_i64(engine, name: str) -> int:
    res = ctypes.c_int64(0)
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(res), ctypes.c_void_p))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup(name))(args)
    return res.value


def _setup() -> bool:
    """JIT the handler once; False where it cannot be used."""
    with _S.lock:
        if _S.ready is not None:
            return _S.ready
        _S.ready = False
        if not sys.platform.startswith("linux"):  # glibc's struct sigaction layout
            return False
        try:
            from diffgpu.runtime import jit

            loaded = jit.load_text(_HANDLER_MODULE, opt_level=2)
            engine = loaded.engine
            _S.keep = loaded
            slot = ctypes.c_int64.from_address(_call_i64(engine, "addr_slot"))
            _S.ensure = ctypes.CFUNCTYPE(ctypes.c_int64)(_call_i64(engine, "addr_ensure"))
        except Exception:  # no JIT here: the worker thread instead
            return False
        _S.ensure()
        _S.slot = slot  # from now on launches take the handler's way
        threading.Thread(target=_watch, name="diffgpu-sigint-watch", daemon=True).start()
        _S.ready = True
        return True


def _watch() -> None:
    """While the main thread is in a launch, put our handler back in place
    if `signal.signal` replaced it (only the main thread calls that, and it
    is busy: no race with it)."""
    while True:
        time.sleep(WATCH_S)
        if _S.slot.value:
            _S.ensure()


def run(fn, packed, flag) -> None:
    """Call `fn(packed)`; Ctrl-C cancels it when called from the main thread
    of a program with a cancel `flag` (ctypes.c_int64)."""
    if flag is None or _get_ident() != _S.main:
        fn(packed)
        return
    slot = _S.slot
    if slot is None:
        if not _setup():
            from diffgpu.runtime import host_worker
            host_worker.run(fn, packed, flag)
            return
        slot = _S.slot
    flag.value = 0  # a stale flag of an earlier interruption
    try:
        slot.value = _addressof(flag)
        fn(packed)
    finally:
        slot.value = 0
    if flag.value:  # cancelled, and the SIGINT handler did not raise
        flag.value = 0
        raise KeyboardInterrupt("host launch interrupted")


_get_ident = threading.get_ident
_addressof = ctypes.addressof


class _Held:
    """The running outermost `deferred_sigint` block: the handler it replaced
    and the frames of the SIGINTs it has held back."""

    def __init__(self, prev):
        self.prev = prev
        self.frames: list = []


_held: list = []  # [the _Held of the running block], main thread only


@contextlib.contextmanager
def deferred_sigint():
    """Hold Ctrl-C back while the block runs (compiling: MLIR's pass manager
    and JIT must not be left half-way by a KeyboardInterrupt raised inside
    them, which corrupts their state and crashes the process later). A SIGINT
    that arrives meanwhile is recorded and handed to the previous handler at
    the block's next `interruption_point()` or when it ends (KeyboardInterrupt
    then, for Python's default). Nested blocks are the outermost one."""
    if _get_ident() != _S.main or _held:
        yield
        return
    prev = signal.getsignal(signal.SIGINT)
    if not callable(prev):  # SIG_IGN, SIG_DFL, or not installed from Python
        yield
        return
    held = _Held(prev)
    signal.signal(signal.SIGINT, lambda sig, frame: held.frames.append(frame))
    _held.append(held)
    try:
        yield
    finally:
        _held.pop()
        signal.signal(signal.SIGINT, prev)
        if _S.ready:  # signal.signal replaced ours: a launch's Ctrl-C cancels at once
            _S.ensure()
        if held.frames:
            _hand_over(prev, held.frames[0])


def _hand_over(prev, frame) -> None:
    """Call `prev`, the handler a deferred block replaced; what it raises is
    remembered for `raised_by_handler`."""
    try:
        prev(signal.SIGINT, frame)
    except BaseException as exc:
        _from_handler[:] = [exc]
        raise


_from_handler: list = []  # the last exception a held-back Ctrl-C's handler raised


def raised_by_handler(exc) -> bool:
    """Did the SIGINT handler raise `exc` (the user's, held back during a
    compile)? Then it is theirs, not a compiler error: pass it on unchanged."""
    return bool(_from_handler) and _from_handler.pop() is exc


def interruption_point() -> None:
    """Inside `deferred_sigint`, where the work may stop (between two passes
    of a compile: no pass manager or JIT is running): a Ctrl-C held back so
    far goes to the previous handler now (KeyboardInterrupt, for Python's
    default), not at the end of the block. Elsewhere: nothing."""
    if not _held or _get_ident() != _S.main or not _held[0].frames:
        return
    held = _held[0]
    frame = held.frames[0]
    held.frames.clear()
    _hand_over(held.prev, frame)
