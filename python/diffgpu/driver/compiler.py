"""The one compile driver: diffgpu IR -> any stage, for the host or a GPU.

    res = compile(text, "sm_90")                   # PTX: res.text, res.kernels
    res = compile(text, "host")                    # LLVM dialect: res.text, res.module
    res = compile(text, "sm_90", up_to_stage="gpu")  # IR after diffgpu-lower-to-gpu

Every compiling path goes through here: `dg.compile` and launches
(launch.py), `kernel.ir(stage=...)` (stages.py), `compile_ptx` and
`compile_host` below and `diffgpu-opt` (its context and pass manager). The
runtime (runtime/) only loads what this returns.

Stages, in pipeline order; each ends a prefix of the target's registered
pipeline (`diffgpu-to-ptx{chip=...}` or `diffgpu-to-host`, expanded from the
registry: no pass list is repeated here):

| stage      | text after                                       | targets   |
|------------|--------------------------------------------------|-----------|
| `dialect`  | the frontend (diffgpu dialect + upstream ops)    | all       |
| `autodiff` | `diffgpu-autodiff`                               | all       |
| `gpu`      | `diffgpu-lower-to-gpu` / `diffgpu-lower-to-host` | all       |
| `nvvm`     | `convert-gpu-to-nvvm`                            | GPU       |
| `llvm`     | the whole lowering to the LLVM dialect           | all       |
| `ptx`      | `gpu-module-to-binary`: the PTX text             | GPU       |

Build once, reuse: each thread keeps one MLIR context (with the diffgpu
dialect loaded) and the pass managers it has built, by pipeline text; a
compile parses its input once and runs the pipeline's top-level elements,
one cached pass manager each (`run_pipeline`: a Ctrl-C during a launch's
compile stops it between two of them, docs/interrupt.md). The context is
replaced after RECYCLE_AFTER compiles (lowering/common/session.py: the
lowering's text-level helpers parse in the same context), which bounds the attributes (PTX
text, locations) it keeps uniqued forever.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from diffgpu.dialects import names as N
from diffgpu.errors import CompileError
#: this thread's context and pass managers (the session lives in the lowering,
#: whose text-level helpers parse in the same context)
from diffgpu.lowering.common.session import (RECYCLE_AFTER, VERIFY_EACH,  # noqa: F401
                                             _take_handed, context, hand_over, new_context,
                                             pass_manager)

STAGES = ("dialect", "autodiff", "gpu", "nvvm", "llvm", "ptx")
GPU_ONLY = ("nvvm", "ptx")
#: stage -> the pipeline element it ends with, per target kind
_MARKERS = {
    "gpu": {"autodiff": "diffgpu-autodiff", "gpu": "diffgpu-lower-to-gpu",
            "nvvm": "convert-gpu-to-nvvm", "llvm": "gpu-module-to-binary"},
    "host": {"autodiff": "diffgpu-autodiff", "gpu": "diffgpu-lower-to-host"},
}
#: work counters: "steps", the pipeline elements run (`run_pipeline`)
STATS: collections.Counter = collections.Counter()
@dataclass
class Compiled:
    """What `compile` returns.

    `stage`: the stage compiled up to; `text`: the IR text there (the PTX for
    `ptx`); `kernels`: for GPU targets, kernel name -> argument descriptors
    (lowering/gpu_ptx.kernel_abi), `entries`: the PTX `.entry` names;
    `module`: for the host `llvm` stage, the lowered module (the JIT loads it
    without parsing `text` again)."""
    target: str
    stage: str
    text: str
    kernels: dict = field(default_factory=dict)
    entries: list = field(default_factory=list)
    module: object = None
    #: the passes' remarks (lowering/common/explain.py: what they did not do, and why)
    remarks: list = field(default_factory=list)


# ---------------------------------------------------------------------------
# pipelines
# ---------------------------------------------------------------------------

def full_pipeline(target: str, racecheck: bool = False, cancel: bool = True) -> str:
    """The whole pipeline for `target` ("host" or "sm_XX")."""
    if target != "host":
        return f"diffgpu-to-ptx{{chip={target}}}"
    flags = " ".join(f for f, on in (("racecheck=1", racecheck), ("cancel=0", not cancel)) if on)
    return "diffgpu-to-host" + (f"{{{flags}}}" if flags else "")


_STAGE_PIPELINES: dict = {}


def stage_pipeline(target: str, stage: str) -> list[str]:
    """Pipeline element texts that end at `stage` for `target` (memoised)."""
    key = (target, stage)
    if key not in _STAGE_PIPELINES:
        _STAGE_PIPELINES[key] = _stage_pipeline(target, stage)
    return list(_STAGE_PIPELINES[key])


def _stage_pipeline(target: str, stage: str) -> list[str]:
    from diffgpu.lowering import registry

    if target == "host":
        name, opts_text, kind = "diffgpu-to-host", None, "host"
    else:
        name, opts_text, kind = "diffgpu-to-ptx", f"chip={target}", "gpu"
    info = registry.pipelines()[name]
    opts = registry.make_options(info.options, opts_text, name)
    elements = registry.expand([registry.parse_one(t) for t in info.expand(opts)])
    marker = _MARKERS[kind].get(stage)
    if marker is None:  # the whole pipeline
        return [e.text() for e in elements]
    out = []
    for el in elements:
        if el.name == marker:
            if stage == "llvm":  # everything before the binary
                return [e.text() for e in out]
            out.append(el)
            return [e.text() for e in out]
        cut = _cut_nested(el, marker)
        if cut is not None:
            out.append(cut)
            return [e.text() for e in out]
        out.append(el)
    raise CompileError(f"internal: pipeline {name} has no '{marker}' for stage {stage!r}")


def _cut_nested(el, marker):
    """`el` with its nested passes cut after `marker`, or None if absent."""
    from diffgpu.lowering.registry import Element

    if not el.nested:
        return None
    for i, sub in enumerate(el.nested):
        if sub.name == marker:
            return Element(el.name, el.options, el.nested[:i + 1])
        cut = _cut_nested(sub, marker)
        if cut is not None:
            return Element(el.name, el.options, el.nested[:i] + [cut])
    return None


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------

def compile(ir_text, target: str, up_to_stage: str | None = None, *, racecheck: bool = False,
            cancel: bool = True) -> Compiled:
    """Compile diffgpu IR (text, or an `ir.Module` of this thread's context,
    which is consumed) for `target` up to `up_to_stage` (default: the end,
    `ptx` for a GPU, `llvm` for the host). `racecheck`/`cancel`: variants of
    the complete host pipeline (lowering/host/to_host.py).

    Raises CompileError with the diagnostics (`file:line:col: error: ...`),
    `lowering.targets.TargetError` for an unknown chip, ValueError for an
    unknown stage."""
    from diffgpu._mlir import MLIRError, ir
    from diffgpu.lowering.common import targets as T
    from diffgpu.lowering.registry import format_diagnostics

    host = target == "host"
    if not host:
        T.check_chip(target)
    final = "llvm" if host else "ptx"
    stage = up_to_stage or final
    if stage not in STAGES or (host and stage in GPU_ONLY):
        raise ValueError(f"unknown stage {stage!r} for target {target!r}")
    module = _take_handed(ir_text) if isinstance(ir_text, str) else None
    if module is not None:
        ctx = module.context
    elif isinstance(ir_text, str):
        ctx = context()
        with ctx, ir.Location.unknown():
            try:
                module = ir.Module.parse(ir_text)
            except MLIRError as exc:
                prefix = "invalid diffgpu IR:\n" if host else ""
                raise CompileError(prefix + format_diagnostics(exc)) from None
    else:
        module, ctx = ir_text, ir_text.context
    if stage == "dialect":
        return Compiled(target, stage, str(module))
    with ctx, ir.Location.unknown():
        kernels = {}
        if host and stage == final:
            _check_host_only(module)
        elif stage == "ptx":
            from diffgpu.lowering.gpu.ptx import kernel_abi
            try:
                kernels = kernel_abi(module, target)
            except ValueError as exc:
                raise CompileError(str(exc)) from None
        pipeline = full_pipeline(target, racecheck, cancel) if stage == final \
            else stage_pipeline(target, stage)
        from diffgpu.lowering.common import explain
        with explain.collect() as remarks:  # an enclosing collect() gets them too
            run_pipeline(pipeline, module, ctx)
        if not VERIFY_EACH:
            _verify_result(module)
        if stage != "ptx":
            return Compiled(target, stage, str(module), module=module if host else None,
                            remarks=remarks)
        from diffgpu.lowering.gpu.ptx import extract_ptx
        from diffgpu.lowering.reduce.grid_sum import with_scratch
        ptxs = extract_ptx(module)
        kernels = with_scratch(kernels, module)  # the per-launch scratch arguments
    res = _ptx_result(target, ptxs, kernels)
    res.remarks = remarks
    return res


def compile_ptx(module_text, chip: str):
    """Compile diffgpu IR (text, or an `ir.Module`, which is consumed) to PTX
    for `chip` with `diffgpu-to-ptx{chip=...}` (`compile`: this thread's
    context and pass manager); a lowering.gpu.ptx.PtxResult.

    Raises `diffgpu.errors.CompileError` with the diagnostics (`loc: error:
    message` lines) when a pass fails, and `diffgpu.lowering.common.targets.TargetError`
    for an unknown chip.
    """
    from diffgpu.lowering.gpu.ptx import PtxResult

    res = compile(module_text, chip)
    return PtxResult(chip, res.text, res.kernels, res.entries)


def has_nvptx() -> bool:
    """Can these MLIR bindings turn a gpu.module into PTX (NVPTX backend)?"""
    global _HAS_NVPTX
    if _HAS_NVPTX is None:
        try:
            res = compile_ptx(_PROBE, "sm_90")
            _HAS_NVPTX = ".target sm_90" in res.ptx and res.entries == ["probe"]
        except Exception:
            _HAS_NVPTX = False
    return _HAS_NVPTX


_HAS_NVPTX = None


_PROBE = f"""
func.func @probe(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {{diffgpu.kernel,
    diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}} {{
  %i = "{N.THREAD_ID}"() {{dim = 0 : i64}} : () -> index
  %x = memref.load %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  %y = math.exp %x : f32
  memref.store %y, %A[%i] : memref<?xf32, strided<[?], offset: ?>>
  return
}}
"""


def pipeline_elements(pipeline) -> list[str]:
    """The top-level elements of `pipeline` (text, or list of element
    texts), pipelines expanded (memoised)."""
    key = pipeline if isinstance(pipeline, str) else tuple(pipeline)
    found = _ELEMENTS.get(key)
    if found is None:
        from diffgpu.lowering import registry
        parsed = registry.parse_pipeline(pipeline) if isinstance(pipeline, str) \
            else [registry.parse_one(t) for t in pipeline]
        found = _ELEMENTS[key] = tuple(e.text() for e in registry.expand(parsed))
    return list(found)


_ELEMENTS: dict = {}


def run_pipeline(pipeline, module, ctx) -> None:
    """Run `pipeline` on `module`, one element at a time (each its own cached
    PassManager). Ctrl-C waits for the running element (a KeyboardInterrupt
    raised inside a pass manager's run crashes the process later) and stops
    the compile before the next one: also a Ctrl-C held back by the launch's
    compile step (runtime/host_signal.py), instead of after the JIT.
    CompileError if a pass fails."""
    from diffgpu.lowering.registry import PipelineRunError, run_passes
    from diffgpu.runtime.host_signal import deferred_sigint, interruption_point

    for element in pipeline_elements(pipeline):
        interruption_point()
        with deferred_sigint():
            try:
                run_passes(pass_manager(element, ctx), module)
            except PipelineRunError as exc:
                raise pass_error(exc) from None
        STATS["steps"] += 1
    interruption_point()


def _verify_result(module) -> None:
    """The pipeline's output must be valid IR (passes ran without per-pass
    verification): an internal error names it, never a crash later."""
    from diffgpu._mlir import MLIRError
    from diffgpu.lowering.registry import format_diagnostics

    try:
        ok = module.operation.verify()
    except MLIRError as exc:
        raise CompileError("internal compiler error: the pipeline produced invalid IR "
                           "(DIFFGPU_VERIFY_EACH=1 names the pass):\n"
                           + format_diagnostics(exc)) from None
    if ok is False:
        raise CompileError("internal compiler error: the pipeline produced invalid IR "
                           "(DIFFGPU_VERIFY_EACH=1 names the pass)")


def pass_error(exc) -> CompileError:
    """The CompileError of a failed pipeline (a `PipelineRunError`): each
    error as `file:line:col: error: message`, and where the location is a line
    of Python source (a kernel's), that line and a caret under the column, as
    the frontend's errors show them (notes indented below):

        k.py:11:5: error: kernel @k_grad needs 64000 bytes of static shared memory, ...
            dg.autodiff(k, dg.Duplicated(A, dA))
            ^
    The first error's position fills the CompileError's `filename`, `line`,
    `col` (0-based) and `source_line`."""
    import linecache

    blocks, first = [], None
    for d in exc.diagnostics:
        src = linecache.getline(d.file, d.line) if d.file and d.line else ""
        if src:
            err = CompileError(d.message, d.file, d.line, max(d.col - 1, 0), src)
            first = first or err
            blocks.append(str(err))
        else:
            blocks.append(d.text())
        blocks.extend("  " + n.text("note") for n in d.notes)
    text = "\n".join(blocks) or str(exc)
    if first is None:
        return CompileError(text)
    out = CompileError(first.msg, first.filename, first.line, first.col, first.source_line)
    out.args = (text,)  # str(out): every error, not only the first one's block
    return out


def _ptx_result(chip: str, ptxs: dict, kernels: dict) -> Compiled:
    from diffgpu.lowering.gpu.ptx import ptx_entries, ptx_undefined_calls

    if not ptxs:
        raise CompileError(f"the module has no GPU kernel or function for {chip}")
    if len(ptxs) != 1:
        raise CompileError(f"the GPU functions have {len(ptxs)} different targets for "
                           f"{chip} (e.g. different O levels); compile_ptx needs one")
    (ptx,) = ptxs.values()
    externs = ptx_undefined_calls(ptx)
    if externs:
        raise CompileError(f"the PTX calls functions it does not define: {', '.join(externs)}")
    entries = ptx_entries(ptx)
    missing = [k for k in kernels if k not in entries]
    if missing:
        raise CompileError(f"kernels missing from the PTX: {', '.join(missing)}")
    return Compiled(chip, "ptx", ptx, kernels, entries)


def _check_host_only(module) -> None:
    """GPU-target functions cannot run on the host (the pass leaves them)."""
    from diffgpu.lowering.common import targets
    from diffgpu.lowering.common.ir_util import sym_name, top_ops

    for op in top_ops(module, ("func.func",)):
        t = targets.get_target(op)
        if t is not None and not targets.is_host(t):
            raise CompileError(f"function '@{sym_name(op)}' targets {targets.describe(t)}; the CPU "
                               "runtime compiles host-target modules only")


def lower_host(module_text: str, racecheck: bool = False, cancel: bool = True) -> str:
    """Run `diffgpu-to-host` (`{racecheck=1}`: the race-checked variant;
    `{cancel=0}`: no Ctrl-C checks) on diffgpu IR text; the LLVM-dialect text."""
    return compile(module_text, "host", racecheck=racecheck, cancel=cancel).text


def compile_host(module_text: str, opt_level: int | None = None,
                 racecheck: bool = False, cancel: bool = True):
    """diffgpu IR text (host-target kernels) -> a launchable
    runtime.cpu.HostProgram.

    Raises CompileError with the diagnostics (`file:line:col: error: ...`)
    of any pass that fails. `opt_level` is LLVM's (None: `DIFFGPU_OPT`,
    default 2; O0 JITs in about half the time and runs slower).
    `racecheck`: the variant with the data-race detector
    (runtime/racecheck.py); `cancel=False`: without the
    Ctrl-C checks (only to measure their cost: such a launch cannot be
    stopped)."""
    from diffgpu.runtime.cpu import HostProgram
    from diffgpu.runtime.host_signal import interruption_point

    res = compile(module_text, "host", racecheck=racecheck, cancel=cancel)
    interruption_point()  # a Ctrl-C during the passes: before the JIT
    return HostProgram.from_module(res.module, res.text, opt_level)


__all__ = ["compile", "Compiled", "STAGES", "stage_pipeline", "compile_host", "lower_host",
           "context", "pass_manager", "new_context", "hand_over", "compile_ptx", "has_nvptx"]
