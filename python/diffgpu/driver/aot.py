"""Ahead-of-time compilation: `dg.compile(kernel, signature, target=...)`.

A signature is a tuple of type specs, one per kernel argument, spelled as
diffgpu prints types: `"float32[:]"`, `"float64[:, :]"` (1 to 3 dims, any
strides), `"int64"` (a scalar); or one string with the specs separated by
commas: `"float32[:], float32[:, :], float32"`.

    c = dg.compile(saxpy, ("float32", "float32[:]", "float32[:]"), target="sm_90")
    dg.save_bundle("saxpy.dgb", [c])          # one file: PTX + metadata
    b = dg.load_bundle("saxpy.dgb")           # no MLIR needed
    b["saxpy"][blocks, 256](a, x, y)          # CuPy arrays on a GPU

`target` is "host" (the CPU; bundles then need MLIR to load the JIT) or any
"sm_XX"; the default is "host".
"""
from __future__ import annotations

from diffgpu.errors import user_facing
from diffgpu.errors import LaunchError
from diffgpu.runtime.args import check_arity, check_geometry, infer_signature, parse_type


def parse_signature(signature) -> tuple:
    if isinstance(signature, str):
        signature = split_specs(signature)
    if not isinstance(signature, (tuple, list)):
        raise ValueError("signature must be a tuple of type specs like "
                         "('float32[:]', 'float32'), or one comma-separated string")
    return tuple(parse_type(s) for s in signature)


def split_specs(text: str) -> list[str]:
    """Split at commas outside brackets."""
    out, depth, cur = [], 0, ""
    for c in text:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip() or out:
        out.append(cur)
    return [s.strip() for s in out]


def _check_target(target: str) -> str:
    from diffgpu.lowering.common.targets import TargetError, check_chip

    if target == "host":
        return target
    try:
        return check_chip(target)
    except TargetError as exc:
        raise ValueError(f"bad target {target!r}: 'host' or an NVIDIA chip; {exc}") from None


@user_facing
def compile(kernel, signature, target: str = "host") -> "CompiledKernel":  # noqa: A001
    """Compile `kernel` for `signature` on `target` without running it.

    `signature`: a tuple of type specs, one per parameter ("float32[:]",
    "float64[:, :]", "int64", ...) or one comma-separated string; `target`:
    "host" or a chip such as "sm_90" (no GPU needed). Returns a
    CompiledKernel (and fills the disk cache); ValueError on a bad
    signature or target, CompileError on a bad kernel."""
    from diffgpu.driver.launch import get_program

    if not (getattr(type(kernel), "__diffgpu_definition__", False)  # api.Kernel
            and kernel.kind == "kernel"):
        raise TypeError(f"dg.compile takes a @dg.kernel, got {type(kernel).__name__}")
    types = parse_signature(signature)
    if len(types) != len(kernel.arg_names):
        raise ValueError(f"{kernel.name} takes {len(kernel.arg_names)} arguments "
                         f"({', '.join(kernel.arg_names)}); the signature has {len(types)}")
    target = _check_target(target)
    program = get_program(kernel, types, target)
    return CompiledKernel(program.payload, kernel.arg_names)


class CompiledKernel:
    """One kernel compiled for one signature and target; launch with
    `compiled[grid, block](*args)` (arguments must match the signature)."""

    def __init__(self, payload: dict, arg_names=None):
        self.payload = payload
        self.name = payload["name"]
        self.target = payload["target"]
        self.types = tuple(parse_type(t) for t in payload["arg_types"])
        self.arg_names = list(arg_names or payload.get("arg_names")
                              or [f"arg{i}" for i in range(len(self.types))])
        self.payload.setdefault("arg_names", self.arg_names)
        self._program = None

    @property
    def signature(self) -> str:
        return ", ".join(str(t) for t in self.types)

    @property
    def ptx(self) -> str | None:
        return self.payload.get("ptx")

    def __repr__(self) -> str:
        return f"<compiled {self.name}({self.signature}) for {self.target}>"

    @user_facing
    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) != 2:
            raise LaunchError(f"launch configuration must be [grid, block], got {config!r}")
        grid, block = check_geometry(*config)
        return lambda *args: self.launch(args, grid, block)

    def matches(self, args) -> bool:
        try:
            sig = infer_signature(args, self.arg_names, self.name)
        except LaunchError:
            return False
        return sig.types == self.types and (sig.device == "host") == (self.target == "host")

    @user_facing
    def launch(self, args, grid, block) -> None:
        """Run on `args` (a sequence matching the signature: same types, and
        numpy arrays for "host", CUDA arrays for a chip) with `grid` blocks of
        `block` threads, each an int or a tuple of 1 to 3 ints as in
        `compiled[grid, block]`; LaunchError, before anything runs, on a
        mismatch."""
        from diffgpu.driver.launch import Program, run_program, target_for

        grid, block = check_geometry(grid, block)
        check_arity(args, self.arg_names, self.name)
        sig = infer_signature(args, self.arg_names, self.name)
        if sig.types != self.types:
            got = ", ".join(str(t) for t in sig.types)
            raise LaunchError(f"{self.name} was compiled for ({self.signature}), "
                              f"called with ({got})")
        if (sig.device == "host") != (self.target == "host"):
            where = "numpy" if sig.device == "host" else "device"
            raise LaunchError(f"{self.name} was compiled for {self.target}; got {where} arrays")
        if sig.device == "gpu":
            target_for(sig)  # a GPU we know how to drive
        if self._program is None:
            self._program = Program(self.payload)
        run_program(self._program, args, sig, grid, block)
