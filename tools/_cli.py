"""Command-line parsing of diffgpu-opt, in mlir-opt's (LLVM cl) style.

Long options take one or two dashes (`-split-input-file`, `--emit=ptx`);
values follow `=` or come as the next argument. Any other `--NAME[=OPTIONS]`
names a pass or pipeline (ours or upstream MLIR's), run in command-line order.
Nothing here imports MLIR: names of passes are checked by the driver.
"""
from __future__ import annotations

from dataclasses import dataclass, field

EMIT_KINDS = ("mlir", "llvm", "ptx")
DEFAULT_SPLIT_MARKER = "// -----"

USAGE = """\
usage: diffgpu-opt [FILE|-] [-o OUT] [--pass-pipeline=PIPELINE | -p PIPELINE]
                   [--PASS-NAME[=OPTIONS] ...] [--split-input-file]
                   [--verify-diagnostics] [--mlir-print-ir-after-all]
                   [--mlir-print-op-generic] [--emit=mlir|llvm|ptx]
                   [--list-passes] [--version]

Parse FILE (default: stdin) as MLIR with the diffgpu dialect loaded, run the
passes, and print the result.

  FILE | -                   input file, `-` for stdin (the default)
  -o OUT                     output file (default: stdout)
  -p, --pass-pipeline=P      textual pipeline, e.g. 'diffgpu-autodiff,cse' or
                             'builtin.module(diffgpu-to-ptx{chip=sm_90})'
  --PASS-NAME[=OPTIONS]      add one pass or pipeline (ours or any upstream MLIR
                             pass), e.g. --canonicalize, --diffgpu-to-ptx=chip=sm_90
  --split-input-file[=MARK]  process each chunk between '// -----' separately
  --verify-diagnostics       check expected-error/-warning/-note/-remark comments
  --mlir-print-ir-after-all  print the IR after every pass (on stderr)
  --mlir-print-op-generic    print ops in generic form
  --mlir-print-debuginfo     print locations (loc(...)) with the ops
  --mlir-disable-threading   run passes on one thread
  --allow-unregistered-dialect  accept ops of dialects nobody registered
  --emit=mlir|llvm|ptx       what to print: the IR (default), LLVM IR or PTX
  --list-passes              list diffgpu's passes and pipelines, and MLIR's
  --version                  print the versions of diffgpu and MLIR
  -h, --help                 this help
"""


class UsageError(ValueError):
    """A command line that diffgpu-opt cannot honour."""


@dataclass
class Options:
    input: str = "-"
    output: str = "-"
    pipeline: str | None = None
    pass_flags: list[tuple[str, str | None]] = field(default_factory=list)
    split_marker: str | None = None
    verify_diagnostics: bool = False
    print_ir_after_all: bool = False
    print_op_generic: bool = False
    print_debuginfo: bool = False
    disable_threading: bool = False
    allow_unregistered: bool = False
    emit: str = "mlir"
    list_passes: bool = False
    version: bool = False
    help: bool = False


_FLAGS = {  # option name -> Options field (boolean flags)
    "verify-diagnostics": "verify_diagnostics",
    "mlir-print-ir-after-all": "print_ir_after_all",
    "mlir-print-op-generic": "print_op_generic",
    "mlir-print-debuginfo": "print_debuginfo",
    "mlir-disable-threading": "disable_threading",
    "allow-unregistered-dialect": "allow_unregistered",
    "list-passes": "list_passes",
    "version": "version",
    "help": "help",
}
_VALUED = {"o": "output", "pass-pipeline": "pipeline", "p": "pipeline", "emit": "emit"}


def parse_args(argv: list[str]) -> Options:
    opts = Options()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positional.extend(argv[i:])
            break
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, eq, value = body.partition("=")
        if name == "h":
            name = "help"
        if not name:
            raise UsageError(f"malformed option {arg!r}")
        if name in _FLAGS:
            if eq:
                raise UsageError(f"option '--{name}' takes no value (got {arg!r})")
            setattr(opts, _FLAGS[name], True)
        elif name == "split-input-file":
            opts.split_marker = value if eq and value else DEFAULT_SPLIT_MARKER
        elif name in _VALUED:
            if not eq:
                if i >= len(argv):
                    raise UsageError(f"option '{arg}' needs a value")
                value = argv[i]
                i += 1
            if name in ("p", "pass-pipeline") and opts.pipeline is not None:
                raise UsageError("only one --pass-pipeline/-p may be given")
            setattr(opts, _VALUED[name], value)
        else:
            if not _looks_like_pass(name):
                raise UsageError(f"unknown option {arg!r} (see --help)")
            opts.pass_flags.append((name, _unquote(value) if eq else None))
    if len(positional) > 1:
        raise UsageError(f"only one input file may be given, got {', '.join(map(repr, positional))}")
    if positional:
        opts.input = positional[0]
    if opts.emit not in EMIT_KINDS:
        raise UsageError(f"unknown --emit value {opts.emit!r}; expected one of: "
                         f"{', '.join(EMIT_KINDS)}")
    if opts.pipeline is not None and opts.pass_flags:
        raise UsageError("--pass-pipeline/-p cannot be combined with individual pass "
                         "flags; put every pass in the pipeline")
    return opts


def _looks_like_pass(name: str) -> bool:
    return name[:1].isalpha() and all(c.isalnum() or c in "-_." for c in name)


def _unquote(value: str) -> str:
    """`"chip=sm_90"` or `{chip=sm_90}` (quotes kept by a shell) -> `chip=sm_90`."""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}":
        v = v[1:-1].strip()
    return v


def pass_flag_text(name: str, value: str | None) -> str:
    """The pipeline element for `--name[=value]`."""
    return f"{name}{{{value}}}" if value else name
