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

Launch-specialised variants: given representative launches (`grid`,
`block` and `example_args`, one or more argument sets), `dg.compile` also
compiles the programs those launches select on the JIT path (their launch
facts, runtime/specialize.py: no aliasing, contiguity, alignment,
coarsening, 32-bit indices, a folded grid) and the compiled kernel keeps
them beside the generic program:

    c = dg.compile(saxpy, sig, target="sm_90", grid=4096, block=256,
                   example_args=[(o, 2.0, x, y)])         # numpy stand-ins are fine

A launch computes its facts as a JIT launch does (`launch.facts_for`) and
runs the variant compiled for exactly those facts, else the generic
program (`STATS["bundle_variant"]` / `["bundle_generic"]` count the
choices). It goes through the JIT's fast path (runtime/fastpath.py): a
repeated launch is one key look-up and the kept `Ready`.
"""
from __future__ import annotations

from diffgpu.errors import user_facing
from diffgpu.errors import LaunchError
from diffgpu.runtime import fastpath
from diffgpu.runtime.args import check_arity, check_geometry, infer_signature, parse_type

#: the most launch-specialised variants one compiled kernel (or bundle entry) holds
MAX_VARIANTS = 64


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
def compile(kernel, signature, target: str = "host", *, grid=None, block=None,  # noqa: A001
            example_args=None) -> "CompiledKernel":
    """Compile `kernel` for `signature` on `target` without running it.

    `signature`: a tuple of type specs, one per parameter ("float32[:]",
    "float64[:, :]", "int64", ...) or one comma-separated string; `target`:
    "host" or a chip such as "sm_90" (no GPU needed). With `grid`, `block`
    and `example_args` (one argument set, or a list of them: numpy arrays
    stand in for device arrays of the same layout), the programs those
    launches select are compiled too, as launch-specialised variants (module
    docstring); a `grid` alone adds the variant a grid beyond the GPU's y / z
    limit needs. Returns a CompiledKernel (and fills the disk cache);
    ValueError on a bad signature, target or example, CompileError on a bad
    kernel."""
    from diffgpu.driver.launch import get_program, program_facts

    if not (getattr(type(kernel), "__diffgpu_definition__", False)  # api.Kernel
            and kernel.kind == "kernel"):
        raise TypeError(f"dg.compile takes a @dg.kernel, got {type(kernel).__name__}")
    types = parse_signature(signature)
    if len(types) != len(kernel.arg_names):
        raise ValueError(f"{kernel.name} takes {len(kernel.arg_names)} arguments "
                         f"({', '.join(kernel.arg_names)}); the signature has {len(types)}")
    target = _check_target(target)
    sets = _example_sets(example_args, len(types))
    if sets and (grid is None or block is None):
        raise ValueError("example_args need the launch's grid and block (their facts depend "
                         "on the geometry)")
    program = get_program(kernel, types, target)
    variants = {}
    for facts in _variant_facts(kernel, types, target, grid, block, sets):
        facts = program_facts(facts, None)  # a primal program: no rows fact
        if facts is not None and facts.key() not in variants:
            variants[facts.key()] = get_program(kernel, types, target, facts=facts).payload
    if len(variants) > MAX_VARIANTS:
        raise ValueError(f"{len(variants)} launch-specialised variants; at most {MAX_VARIANTS}")
    return CompiledKernel(program.payload, kernel.arg_names, list(variants.values()))


def _example_sets(example_args, nargs: int) -> list:
    """`example_args` as a list of argument lists: one set (its items
    arrays or scalars) or a list / tuple of sets."""
    if example_args is None:
        return []
    if not isinstance(example_args, (list, tuple)) or not example_args:
        raise ValueError("example_args must be one argument set (a list or tuple of the "
                         "kernel's arguments) or a non-empty list of them")
    if all(isinstance(a, (list, tuple)) for a in example_args):
        sets = [list(a) for a in example_args]
    else:
        sets = [list(example_args)]
    for i, args in enumerate(sets):
        if len(args) != nargs:
            raise ValueError(f"example_args[{i}] has {len(args)} arguments; the kernel "
                             f"takes {nargs}")
    return sets


def _variant_facts(kernel, types, target: str, grid, block, sets) -> list:
    """The launch facts (program variants) of the example launches, as the
    JIT path computes them; facts None (the generic program) are left out."""
    from diffgpu.driver.launch import facts_for
    from diffgpu.runtime.specialize import fold_facts

    if grid is None and block is None:
        return []
    g, b = check_geometry(1 if grid is None else grid, 1 if block is None else block)
    out = []
    if not sets:
        facts = fold_facts(g)
        facts = None if facts is None else facts.for_target(target)
        return [] if facts is None else [facts]
    for i, args in enumerate(sets):
        try:
            sig = infer_signature(args, kernel.arg_names, kernel.name)
        except LaunchError as exc:
            raise ValueError(f"example_args[{i}]: {exc}") from None
        if sig.types != types:
            got = ", ".join(str(t) for t in sig.types)
            raise ValueError(f"example_args[{i}] are ({got}), not the signature "
                             f"({', '.join(str(t) for t in types)})")
        facts = facts_for(args, types, target, g, b)
        if facts is not None:
            out.append(facts)
    return out


class CompiledKernel:
    """One kernel compiled for one signature and target, with its
    launch-specialised variants; launch with `compiled[grid, block](*args)`
    (arguments must match the signature)."""

    def __init__(self, payload: dict, arg_names=None, variants=()):
        self.payload = payload
        self.name = payload["name"]
        self.target = payload["target"]
        self.types = tuple(parse_type(t) for t in payload["arg_types"])
        self.arg_names = list(arg_names or payload.get("arg_names")
                              or [f"arg{i}" for i in range(len(self.types))])
        self.payload.setdefault("arg_names", self.arg_names)
        #: facts key (runtime/specialize.py Facts.key) -> the variant's payload
        self.variants = {}
        for v in variants:
            v.setdefault("arg_names", self.arg_names)
            self.variants[v["facts"]] = v
        #: facts key or None (generic) -> its loaded Program
        self._programs: dict = {}
        self._launchers: dict = {}  # [grid, block] of plain ints -> its launcher

    @property
    def signature(self) -> str:
        return ", ".join(str(t) for t in self.types)

    @property
    def ptx(self) -> str | None:
        return self.payload.get("ptx")

    def __repr__(self) -> str:
        more = f" + {len(self.variants)} variants" if self.variants else ""
        return f"<compiled {self.name}({self.signature}) for {self.target}{more}>"

    @user_facing
    def __getitem__(self, config):
        return launcher(self, config)

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
        grid, block = check_geometry(grid, block)
        fastpath.launch(self, tuple(args), grid, block, _bind)

    def check(self, args):
        """The launch's Signature; LaunchError unless `args` fit this entry."""
        from diffgpu.driver.launch import target_for

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
        return sig

    def program_for(self, facts):
        """The Program a launch with `facts` runs: the variant compiled for
        exactly them, else the generic one (counted in STATS); for a folded
        grid the variant with only its fold stands in for the generic one,
        as on the JIT path without a compiler (launch.get_program)."""
        from diffgpu.driver.launch import Program, program_facts
        from diffgpu.runtime.specialize import Facts

        facts = program_facts(facts, None)  # keyed as the variants were
        key = None if facts is None else facts.key()
        which = key if key in self.variants else None
        if which is None and facts is not None and facts.grid_fold:
            fold = Facts(grid_fold=facts.grid_fold).key()
            which = fold if fold in self.variants else None
        fastpath.STATS["bundle_variant" if which is not None else "bundle_generic"] += 1
        prog = self._programs.get(which)
        if prog is None:
            prog = self._programs[which] = Program(
                self.payload if which is None else self.variants[which])
        return prog


def launcher(owner, config):
    """`owner[grid, block]` of a compiled or bundled kernel: a function of
    the arguments that launches through the fast path (`_bind` on a miss);
    kept per configuration of plain ints (launch loops repeat theirs)."""
    plain = type(config) is tuple and len(config) == 2 and all(
        type(v) is int or type(v) is tuple and all(type(x) is int for x in v) for v in config)
    found = owner._launchers.get(config) if plain else None
    if found is not None:
        return found
    if not isinstance(config, tuple) or len(config) != 2:
        raise LaunchError(f"launch configuration must be [grid, block], got {config!r}")
    grid, block = check_geometry(*config)
    found = user_facing(lambda *args: fastpath.launch(owner, args, grid, block, _bind))
    if plain and len(owner._launchers) < 256:
        owner._launchers[config] = found
    return found


def _bind(owner, args, grid, block, key):
    """The slow path of a compiled (or bundled: driver/bundle.py) kernel's
    launch, for `fastpath.launch`: the full checks, the launch facts as the
    JIT path computes them, the variant they select; the `Ready` stored
    under `key` (or, for arguments off the fast path, the launch run here)."""
    from diffgpu.driver.launch import facts_for, run_program

    entry, sig = owner.select(args) if hasattr(owner, "select") else (owner, owner.check(args))
    facts = facts_for(args, sig.types, entry.target, grid, block)
    program = entry.program_for(facts)
    fastpath.remember(owner, args, sig)  # device array types join the fast path
    if key is None:
        run_program(program, args, sig, grid, block)
        return None
    if program.heap_tape is not None:  # its heap tapes fit (runtime/launch_checks.py)
        from diffgpu.runtime.launch_checks import check_heap
        check_heap(program, args, grid, block, sig)
    ready = fastpath.Ready(program, sig, grid, block)  # LaunchError: a fold it lacks
    hot = owner.__dict__["_fast"].hot
    if len(hot) >= fastpath._HOT_MAX:
        hot.clear()
    hot[key] = ready  # owner._programs is not empty now: fastpath.launch looks keys up
    return ready
