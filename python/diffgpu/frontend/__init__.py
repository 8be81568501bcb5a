"""The Python frontend: `@dg.kernel` / `@dg.func` source -> diffgpu IR text.

`build_module(defn, arg_types, target)` lowers a kernel (or func) specialized
on its argument types, with every function it calls, into one MLIR module
(text; upstream ops in custom syntax, diffgpu ops generic, a `loc(...)` on
every op). `build_diff_module(...)` wraps a kernel into a new kernel whose body
is one `diffgpu.autodiff` / `diffgpu.fwddiff` op (the host-side
`dg.autodiff(kernel[grid, block], ...)`). Both raise
`diffgpu.errors.CompileError` for user errors. This package never imports MLIR.

Semantics worth knowing (see types_infer.py for the typing rules):
- literals and `int()`/`float()` results are weak (NumPy 2 / JAX): `2.0 * x[i]`
  stays float32; a strong int with a float gives that float type;
- `and`/`or` follow Python: the value of the operand that decides (`x and y`
  is y when x is true, else x), in the operands' common type, so gradients
  flow through the chosen operand; the right operand is evaluated only when
  needed when it loads memory or calls (`i < n and A[i] > 0` is safe);
- arrays of float16 / bfloat16 load into float32 and store back rounded to
  nearest even (types_infer.STORAGE): no value of the frontend is 16-bit;
- math functions come from `dg`, `math` and numpy (`np.exp`, `np.maximum`, ...;
  `np.float32(x)` is a strongly typed conversion); `math.floor/ceil/trunc` and
  `round` return ints (Python), `dg.floor/ceil/trunc`, `np.floor` floats;
- a constant negative index `A[-1]` counts from the end; runtime indices are
  used as they are (no wrap-around, no bounds check);
- `break`/`continue`/early `return` are structured (the rest of the block goes
  under an `scf.if`); a `return` inside a loop raises a hidden flag that
  ends the loops around it (`scf.while`), then returns;
- a variable assigned in only one branch (or only inside a loop) and read
  afterwards is an error, as Python would risk a NameError.

Modules: source (AST, locations, errors), values / types_infer (what an
expression is, promotion), emitter (MLIR text), expressions / operators /
statements / loops / builtins_lower / scalar_builtins / diff_lower / vectors /
vector_builtins (the visitor's mixins; scalar_builtins: dg.sign ... dg.erfinv; vectors, matrices and quaternions are register tuples
of scalars, see docs/vectors.md),
lowerer (one function), module (specializations of all callees), diff_kernel
(the host API's derivative kernels).

May import: diffgpu.dialects (op names), lowering.checks (the shared memory
limit) and the foundation modules of diffgpu; never MLIR.
"""
from __future__ import annotations

from dataclasses import dataclass

from diffgpu.errors import CompileError
from diffgpu.frontend.source import FrontendError, debug, to_compile_error


@dataclass(frozen=True)
class ModuleSource:
    text: str
    entry: str


def _convert(fn):
    """Run `fn()`, turning frontend errors (and internal bugs) into
    CompileError without our traceback (DIFFGPU_DEBUG=1 keeps it)."""
    try:
        return fn()
    except FrontendError as e:
        err = to_compile_error(e)
        if debug():
            raise err from e
        raise err from None
    except CompileError:
        raise
    except RecursionError:
        raise CompileError("kernel too deeply nested to compile") from None


def build_module(defn, arg_types: tuple, target: str) -> ModuleSource:
    from diffgpu.frontend.module import ModuleBuilder, from_api_type

    def run():
        mb = ModuleBuilder(target)
        types = tuple(from_api_type(t) for t in arg_types)
        info = mb.specialize(defn, types, entry=True)
        return ModuleSource(mb.text(), info.symbol)
    return _convert(run)


def build_diff_module(defn, mode: str, activities: tuple, arg_types: tuple,
                      target: str) -> ModuleSource:
    from diffgpu.frontend.diff_kernel import build_diff_text

    def run():
        text, entry = build_diff_text(defn, mode, tuple(activities), tuple(arg_types), target)
        return ModuleSource(text, entry)
    return _convert(run)


__all__ = ["ModuleSource", "build_module", "build_diff_module"]
