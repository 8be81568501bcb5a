"""Ctrl-C during a host launch: a SIGINT handler that cancels the kernel.

A JIT-compiled entry called through ctypes holds the main thread until it
returns, and Python runs its SIGINT handler only between bytecodes: an
endless `while` in a kernel could not be stopped. So, around a launch from
the main thread, the process's SIGINT handler is a tiny function of ours
(JIT-compiled once per process from the LLVM dialect, kept alive for good):

    if (slot) *slot = 1;                    // the running program's cancel flag
    if (prev > SIG_IGN) prev(sig);          // then Python's own handler

`slot` holds the address of the cancel flag of the program the main thread
is running (lowering/host_cancel.py: generated loops and the block loop
test it), 0 between launches. Python's handler records the signal as usual,
so KeyboardInterrupt (or the user's handler) runs as soon as the cancelled
launch returns, within about a second. The handler is installed with
`sigaction`, keeping Python's flags and mask, only while Python handles
SIGINT itself (not under SIG_IGN/SIG_DFL); `signal.signal` later simply
replaces it. A launch checks (one system call) that ours is still in place
when the last check is more than RECHECK_S old: in between, a replaced
handler only means that launch cannot be cancelled, as before. Cost per
launch: a few stores and a clock read, no thread switch.

Launches from other threads (which never receive KeyboardInterrupt), and
programs without a flag (lowered before it existed), call the entry
directly; where `sigaction` has no known layout (not Linux), a worker thread
does the waiting instead (runtime/host_worker.py).
"""
from __future__ import annotations

import ctypes
import signal
import sys
import threading
import time

#: how often (seconds) a launch checks that our handler is still installed
RECHECK_S = 0.05

_HANDLER_MODULE = """
llvm.mlir.global internal @slot(0 : i64) {addr_space = 0 : i32} : i64
llvm.mlir.global internal @prev(0 : i64) {addr_space = 0 : i32} : i64
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
llvm.func @addr_slot() -> i64 {
  %s = llvm.mlir.addressof @slot : !llvm.ptr
  %a = llvm.ptrtoint %s : !llvm.ptr to i64
  llvm.return %a : i64
}
llvm.func @addr_prev() -> i64 {
  %s = llvm.mlir.addressof @prev : !llvm.ptr
  %a = llvm.ptrtoint %s : !llvm.ptr to i64
  llvm.return %a : i64
}
llvm.func @addr_handler() -> i64 {
  %s = llvm.mlir.addressof @__dg_host_sigint : !llvm.ptr
  %a = llvm.ptrtoint %s : !llvm.ptr to i64
  llvm.return %a : i64
}
"""


class _SigAction(ctypes.Structure):
    """glibc's `struct sigaction` (Linux, x86-64 and AArch64)."""
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ubyte * 128),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.ready = None  # None: not tried; False: unavailable; True
        self.keep = None  # the handler's engine and context: alive for good
        self.slot = self.prev = None  # ctypes.c_int64 views of the globals
        self.handler = 0
        self.libc = None
        self.cur = _SigAction()  # reused by every check (main thread only)
        self.cur_ref = ctypes.byref(self.cur)
        self.main = threading.main_thread().ident
        self.checked = -1.0  # time of the last successful check that ours is installed


_S = _State()
_SIGINT = int(signal.SIGINT)


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
        if not sys.platform.startswith("linux"):
            return False
        try:
            from diffgpu._mlir import execution_engine, ir
            from diffgpu.dialects import make_context

            ctx = make_context()
            with ctx:
                module = ir.Module.parse(_HANDLER_MODULE)
                engine = execution_engine.ExecutionEngine(module, opt_level=2)
            _S.keep = (ctx, module, engine)
            _S.slot = ctypes.c_int64.from_address(_call_i64(engine, "addr_slot"))
            _S.prev = ctypes.c_int64.from_address(_call_i64(engine, "addr_prev"))
            _S.handler = _call_i64(engine, "addr_handler")
            _S.libc = ctypes.CDLL(None, use_errno=True)
            _S.libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
            _S.sigaction = _S.libc.sigaction
        except Exception:  # no JIT, no libc: the worker thread instead
            return False
        _S.ready = bool(_S.handler)
        return _S.ready


def _installed() -> bool:
    """Ours is the SIGINT handler now (installed if Python handles SIGINT)."""
    cur = _S.cur
    if _S.sigaction(_SIGINT, None, _S.cur_ref) != 0:
        return False
    if cur.handler == _S.handler:
        return True
    if cur.handler is None or cur.handler <= 1:
        return False  # SIG_DFL / SIG_IGN: Ctrl-C is not Python's to handle
    new = _SigAction()
    ctypes.memmove(ctypes.byref(new), ctypes.byref(cur), ctypes.sizeof(cur))
    new.handler = _S.handler
    _S.prev.value = cur.handler  # chain to Python's handler
    return _S.sigaction(_SIGINT, ctypes.byref(new), None) == 0


def run(fn, packed, flag) -> None:
    """Call `fn(packed)`; Ctrl-C cancels it when called from the main thread
    of a program with a cancel `flag` (ctypes.c_int64)."""
    if flag is None or threading.get_ident() != _S.main:
        fn(packed)
        return
    if not _setup():
        from diffgpu.runtime import host_worker
        host_worker.run(fn, packed, flag)
        return
    flag.value = 0  # a stale flag of an earlier interruption
    now = time.monotonic()
    if now - _S.checked > RECHECK_S:
        if not _installed():
            _S.checked = -1.0
            fn(packed)
            return
        _S.checked = now
    try:
        _S.slot.value = ctypes.addressof(flag)
        fn(packed)
    finally:
        _S.slot.value = 0
    if flag.value:  # cancelled, and the SIGINT handler did not raise
        flag.value = 0
        raise KeyboardInterrupt("host launch interrupted")
