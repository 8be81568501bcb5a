"""The compile session of a thread: one MLIR context (with the diffgpu
dialect loaded), replaced after RECYCLE_AFTER compiles, and the pass managers
built in it, by pipeline text; plus the one module handed from a text-level
step to the next (`hand_over`). The compile driver
(python/diffgpu/driver/compiler.py) and the text-level helpers of the
lowering (`mark_facts`, `coarsen_factor`, dg.vjp's `analyze_text`) parse in
this context, so a launch never builds a second one.
"""
from __future__ import annotations

import os
import threading

#: compiles per thread context before a fresh one replaces it
RECYCLE_AFTER = 256
#: verify the IR after every pass of a compile (MLIR's default), or once,
#: after the whole pipeline (the default here: per-pass verification was
#: 2.5 ms of a 34 ms kernel + gradient compile). The test suite sets
#: DIFFGPU_VERIFY_EACH=1, so a pass that leaves invalid IR fails at that
#: pass there; `diffgpu-opt` always verifies after each pass.
VERIFY_EACH = os.environ.get("DIFFGPU_VERIFY_EACH", "0").lower() not in ("0", "", "false", "no")

_LOCAL = threading.local()
#: contexts a forked child inherited: never used (their thread pool did not
#: survive the fork) and never destroyed (that would wait for those threads)
_INHERITED: list = []


def _after_fork_in_child() -> None:
    """A forked child (gpu_check.py prepares each case in one) compiles in a
    fresh context: the parent's would run passes on a dead thread pool."""
    _INHERITED.append(dict(_LOCAL.__dict__))
    _LOCAL.__dict__.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def new_context():
    """A fresh MLIR context with the upstream dialects and diffgpu's,
    single-threaded: a kernel's module holds one gpu.module, so MLIR's
    thread pool only added synchronisation (1 ms of a 34 ms compile)."""
    from diffgpu.dialects import make_context
    ctx = make_context()
    ctx.enable_multithreading(False)
    return ctx


def context():
    """This thread's compile context (created on first use, recycled)."""
    st = _LOCAL.__dict__
    if st.get("ctx") is None or st.get("uses", 0) >= RECYCLE_AFTER:
        st["ctx"], st["uses"], st["pms"] = new_context(), 0, {}
    st["uses"] += 1
    return st["ctx"]


def pass_manager(pipeline, ctx=None, cached: bool = True):
    """A PassManager for `pipeline` (text, or list of element texts) in `ctx`
    (this thread's context by default). Cached per thread context by its
    text when `cached` (a run does not change a PassManager); uncached ones
    may be configured (IR printing, timing) by the caller."""
    from diffgpu.lowering.pipelines import build_pass_manager

    if not cached or (ctx is not None and ctx is not getattr(_LOCAL, "ctx", None)) \
            or not _reusable(pipeline):
        return build_pass_manager(pipeline, ctx)
    ctx = ctx or context()
    key = pipeline if isinstance(pipeline, str) else tuple(pipeline)
    pms = _LOCAL.pms
    pm = pms.get(key)
    if pm is None:
        pm = pms[key] = build_pass_manager(pipeline, ctx)
        pm.enable_verifier(VERIFY_EACH)  # else compile() verifies once at the end
    return pm


#: upstream passes that keep state from one run to the next, so that a second
#: run of the same PassManager crashes: convert-math-to-funcs remembers the
#: functions it outlined (e.g. `math.fpowi`) in the previous module
_STATEFUL = ("convert-math-to-funcs",)
_REUSABLE: dict = {}


def _reusable(pipeline) -> bool:
    """Can a PassManager of `pipeline` run more than once (no _STATEFUL pass)?"""
    key = pipeline if isinstance(pipeline, str) else tuple(pipeline)
    ok = _REUSABLE.get(key)
    if ok is None:
        from diffgpu.lowering import pipelines as P
        elements = P.parse_pipeline(pipeline) if isinstance(pipeline, str) \
            else [P.parse_one(t) for t in pipeline]
        names = [e.name for e in P._walk(P.expand(elements))]
        ok = _REUSABLE[key] = not any(n in _STATEFUL for n in names)
    return ok


def hand_over(module) -> str:
    """The text of `module` (with locations), remembered with the module: a
    `compile` of this very string object (the next step of a launch: the
    frontend's module marked with its launch facts) takes the module instead
    of parsing the text again. One module is remembered per thread."""
    text = module.operation.get_asm(enable_debug_info=True)
    _LOCAL.handed = (text, module)
    return text


def _take_handed(text: str):
    handed = getattr(_LOCAL, "handed", None)
    if handed is not None and handed[0] is text:
        _LOCAL.handed = None
        if handed[1].context is getattr(_LOCAL, "ctx", None):
            return handed[1]
    return None
