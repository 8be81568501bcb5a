"""diffgpu-opt: an `mlir-opt`-style driver for diffgpu's IR.

    diffgpu-opt kernel.mlir -p 'diffgpu-autodiff,diffgpu-to-ptx{chip=sm_90}' --emit=ptx
    diffgpu-opt test.mlir --split-input-file --verify-diagnostics --diffgpu-verify-targets
    cat k.mlir | diffgpu-opt - --diffgpu-autodiff --canonicalize --cse

Input is parsed with the diffgpu dialect loaded; passes come from the one
registry (`diffgpu.lowering.registry`): ours, our pipelines, and every
upstream MLIR pass by its own name. Diagnostics print as
`FILE:LINE:COL: error: message`; the exit status is 0 on success and 1 on any
diagnostic, bad option or bad input. Nothing a user passes yields a Python
traceback (DIFFGPU_DEBUG=1 shows internal ones).
"""
from __future__ import annotations

import os
import re
import sys

from diffgpu.tools import _cli, _diag

PROG = "diffgpu-opt"


class DriverError(Exception):
    """A problem reported as `diffgpu-opt: error: ...` (exit status 1)."""


def main(argv: list[str] | None = None) -> int:
    """Run diffgpu-opt on `argv` (default: sys.argv[1:]); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except DriverError as exc:
        _err(str(exc))
        return 1
    except _cli.UsageError as exc:
        _err(f"{exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `diffgpu-opt ... | head`: stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 1
    except Exception as exc:  # last resort: never a traceback for users
        if os.environ.get("DIFFGPU_DEBUG"):
            import traceback
            traceback.print_exc()
        sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {exc}"
                         + ("" if os.environ.get("DIFFGPU_DEBUG")
                            else " (set DIFFGPU_DEBUG=1 for the traceback)") + "\n")
        return 1


def _err(msg: str) -> None:
    sys.stderr.write(f"{PROG}: error: {msg}\n")


def _run(argv: list[str]) -> int:
    opts = _cli.parse_args(argv)
    if opts.help:
        sys.stdout.write(_cli.USAGE)
        return 0
    if opts.version:
        sys.stdout.write(_version_text())
        return 0
    if opts.list_passes:
        from diffgpu.tools._listing import list_passes
        sys.stdout.write(list_passes())
        return 0

    _check_output_path(opts.output)
    from diffgpu.driver import compiler
    ctx = compiler.new_context()
    ctx.allow_unregistered_dialects = opts.allow_unregistered
    if opts.disable_threading:
        ctx.enable_multithreading(False)
    pipeline = _pipeline_text(opts, ctx)
    pm = _build(pipeline, ctx) if pipeline else None
    if pm is not None and opts.print_ir_after_all:
        pm.enable_ir_printing(print_after_all=True, enable_debug_info=opts.print_debuginfo,
                              print_generic_op_form=opts.print_op_generic)

    display, data = _read_input(opts.input)
    text = _decode(data, display)
    _check_nesting(text, display)
    lines = _lines(text)
    chunks = _split(lines, opts.split_marker)
    printer = _diag.Printer(display, lines, sys.stderr)
    runner = _ChunkRunner(ctx, pm, opts, printer)

    outputs, ok = [], True
    for first, last in chunks:
        out, chunk_ok = runner.run(lines, first, last)
        ok = ok and chunk_ok
        if out is not None:
            outputs.append(out)
    sep = "\n" + (opts.split_marker or _cli.DEFAULT_SPLIT_MARKER) + "\n"
    text = sep.join(o.rstrip("\n") + "\n" for o in outputs) if outputs else ""
    if ok or opts.output == "-":  # like mlir-opt, keep an output file only on success
        _write_output(opts.output, text)
    return 0 if ok else 1


# ---------------------------------------------------------------------------
# Pipeline
# ---------------------------------------------------------------------------

def _pipeline_text(opts, ctx) -> str:
    """The textual pipeline from -p or from the --PASS-NAME flags."""
    from diffgpu.lowering import registry

    if opts.pipeline is not None:
        return opts.pipeline
    ours = set(registry.passes()) | set(registry.pipelines())
    elems = []
    for name, value in opts.pass_flags:
        text = _cli.pass_flag_text(name, value)
        if name not in ours:
            text = _nest_upstream(name, text, ctx)
        elems.append(text)
    return ",".join(elems)


def _nest_upstream(name: str, text: str, ctx) -> str:
    """Check that `name` is an upstream pass; nest it under its anchor op
    (`func.func(...)`, `gpu.module(...)`) the way mlir-opt nests implicitly."""
    from diffgpu._mlir import passmanager
    from diffgpu.lowering import registry

    scratch = passmanager.PassManager("builtin.module", context=ctx)
    res = registry._capture_fd2(lambda: scratch.add(name))
    if res is None:
        return text
    msg = str(res[0]) + res[1]
    if "does not refer to a registered pass" in msg:
        raise _cli.UsageError(f"unknown option or pass '--{name}' (see --list-passes; "
                              "every upstream MLIR pass is available by its name)")
    anchor = _anchor(msg)
    if anchor is None:
        raise DriverError(f"cannot run pass '--{name}': {msg.strip()}")
    return f"{anchor}({text})"


def _anchor(msg: str) -> str | None:
    import re
    m = re.search(r"restricted to '([\w.]+)'", msg)
    return m.group(1) if m else None


def _build(pipeline: str, ctx):
    from diffgpu.lowering import registry
    from diffgpu.lowering.common import targets

    try:
        _check_anchors(registry.parse_pipeline(pipeline), "builtin.module")
        from diffgpu.driver import compiler  # its own pass manager: the IR printing options
        return compiler.pass_manager(pipeline, ctx, cached=False)
    except (registry.PipelineError, targets.TargetError) as exc:
        msg = str(exc)
        m = re.search(r"'([\w.-]+)' does not refer to a registered pass or pass pipeline", msg)
        if m:
            msg = (f"unknown pass '{m.group(1)}' in pipeline {pipeline!r} (see --list-passes; "
                   "every upstream MLIR pass is available by its name)")
        raise DriverError("\n".join(ln for ln in msg.splitlines() if ln.strip())) from None


#: upstream passes that convert the op they are anchored on (func.func ->
#: llvm.func): nested under a function, MLIR segfaults
_REPLACE_ANCHOR = ("convert-to-llvm", "convert-to-emitc")
_MODULE_LIKE = ("builtin.module", "gpu.module")
#: upstream pass families that abort (assertions, `llvm_unreachable`) on IR
#: they do not expect, found by running every upstream pass on diffgpu's IR
#: at each stage: Intel XeGPU passes on NVVM IR and gpu.modules
_ABORTING_PREFIXES = ("xegpu-",)


def _check_anchors(elements, anchor: str) -> None:
    """Reject pipelines MLIR would crash on, before it sees them."""
    for el in elements:
        if el.name.startswith(_ABORTING_PREFIXES):
            raise DriverError(f"pass '{el.name}' (Intel XeGPU) is not available in "
                              "diffgpu-opt: it aborts the process on IR it does not expect")
        if el.name in _REPLACE_ANCHOR and anchor not in _MODULE_LIKE:
            raise DriverError(f"pass '{el.name}' converts the op it runs on; run it on "
                              f"builtin.module or gpu.module, not nested in '{anchor}' "
                              "(MLIR crashes on that)")
        if el.nested is not None:
            _check_anchors(el.nested, el.name)


# ---------------------------------------------------------------------------
# Input / output
# ---------------------------------------------------------------------------

def _read_input(path: str) -> tuple[str, bytes]:
    if path == "-":
        return "<stdin>", sys.stdin.buffer.read()
    if os.path.isdir(path):
        raise DriverError(f"cannot read '{path}': is a directory")
    try:
        with open(path, "rb") as f:
            return path, f.read()
    except OSError as exc:
        raise DriverError(f"cannot open input file '{path}': {exc.strerror or exc}") from None


def _decode(data: bytes, display: str) -> str:
    if not data.strip():
        raise DriverError(f"{display}: input is empty")
    if data.startswith(b"ML\xefR"):
        raise DriverError(f"{display}: MLIR bytecode input is not supported; "
                          "give the textual form")
    if b"\0" in data:
        raise DriverError(f"{display}: input is binary (contains NUL bytes), not MLIR text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise DriverError(f"{display}:{line}: input is not valid UTF-8 "
                          f"(byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


#: deepest bracket nesting accepted: MLIR's parser, verifier and printer
#: recurse and overflow the C stack (a segfault) on inputs nested a few
#: thousand levels deep; real kernels stay far below this
MAX_NESTING = 256
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|->|[\[({<]|[\])}>]|\n')


def _check_nesting(text: str, display: str) -> None:
    """Reject absurdly deep nesting (outside strings and comments) up front."""
    depth, lineno = 0, 1
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok == "\n":
            lineno += 1
        elif tok in "([{<":
            depth += 1
            if depth > MAX_NESTING:
                raise DriverError(
                    f"{display}:{lineno}: input nests brackets more than {MAX_NESTING} levels "
                    "deep; diffgpu-opt does not accept it (MLIR would overflow its stack)")
        elif tok in ")]}>":
            depth = max(depth - 1, 0)


def _lines(text: str) -> list[str]:
    """Lines as MLIR counts them: split at '\\n' only (str.splitlines also
    splits at \\r, \\f, U+2028, ..., which would shift line numbers)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _split(lines: list[str], marker: str | None) -> list[tuple[int, int]]:
    """Line ranges [first, last) of the chunks (one chunk without a marker)."""
    if marker is None:
        return [(0, len(lines))]
    chunks, first = [], 0
    for i, line in enumerate(lines):
        if line.strip() == marker:
            chunks.append((first, i))
            first = i + 1
    chunks.append((first, len(lines)))
    return chunks


def _check_output_path(path: str) -> None:
    if path == "-":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise DriverError(f"cannot open output file '{path}': is a directory")
    if not os.path.isdir(parent):
        raise DriverError(f"cannot open output file '{path}': no such directory '{parent}'")


def _write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise DriverError(f"cannot write output file '{path}': {exc.strerror or exc}") from None


def _version_text() -> str:
    from diffgpu._version import LLVM_TOOLS_DISTRIBUTION, MLIR_DISTRIBUTION, __version__
    return (f"diffgpu-opt (diffgpu) {__version__}\n"
            f"MLIR: {MLIR_DISTRIBUTION} (LLVM tools: {LLVM_TOOLS_DISTRIBUTION})\n")


# ---------------------------------------------------------------------------
# One chunk: parse, run, print / verify
# ---------------------------------------------------------------------------

class _ChunkRunner:
    def __init__(self, ctx, pm, opts, printer):
        self.ctx, self.pm, self.opts, self.printer = ctx, pm, opts, printer
        self.diags: list[_diag.Diag] = []
        # Every diagnostic goes to our handler, errors included: the bindings
        # otherwise capture errors in pm.run and abort the process (an
        # assertion) when a pass emits an error yet succeeds, as
        # convert-to-llvm does on a memref in a GPU address space.
        ctx.emit_error_diagnostics = True
        ctx.attach_diagnostic_handler(self._on_diag)

    def _on_diag(self, d) -> bool:
        try:
            self.diags.append(_diag.from_mlir(d))
        except Exception:  # never let a handler raise into MLIR
            pass
        return True

    def run(self, lines: list[str], first: int, last: int):
        """(output text or None, ok) for lines[first:last]."""
        self.diags = []
        # pad with newlines so that line numbers are the file's, like mlir-opt
        source = "\n" * first + "".join(lines[first:last])
        out = self._process(source)
        if self.opts.verify_diagnostics:
            expected, errors = _diag.parse_expected(lines, first, last)
            problems = [_diag.Diag("error", m, _diag.BUFFER_NAME, ln, col)
                        for ln, col, m in errors]
            problems += _diag.verify(self.diags, expected)
            for p in problems:
                self.printer.emit(p)
            return out, not problems
        for d in self.diags:
            self.printer.emit(d)
        has_error = any(d.severity == "error" for d in self.diags)
        return (out if not has_error else None), out is not None and not has_error

    def _process(self, source: str) -> str | None:
        from diffgpu._mlir import MLIRError, ir
        from diffgpu.tools import _emit

        with self.ctx, ir.Location.unknown():
            try:
                module = ir.Module.parse(source)
            except MLIRError as exc:
                self._add_error(exc)
                return None
            if self.pm is not None:
                try:
                    self.pm.run(module.operation)
                except MLIRError as exc:
                    self._add_error(exc)
                    return None
            try:
                return _emit.render(module, self.opts.emit, self.opts.print_op_generic,
                                    self.opts.print_debuginfo, self.printer.name)
            except _emit.EmitError as exc:
                d = _diag.Diag("error", str(exc), _diag.WHOLE_INPUT)
                where = _diag.resolve_loc(exc.location)
                if where is not None:
                    d.file, d.line, d.col = where
                self.diags.append(d)
                return None

    def _add_error(self, exc) -> None:
        diags = [_diag.from_mlir(d) for d in getattr(exc, "error_diagnostics", [])]
        if not diags and not any(d.severity == "error" for d in self.diags):
            diags = [_diag.Diag("error", str(exc).strip(), _diag.WHOLE_INPUT)]
        self.diags.extend(diags)


if __name__ == "__main__":
    sys.exit(main())
