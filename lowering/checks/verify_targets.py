"""Pass `diffgpu-verify-targets`: the compilation target follows the nesting.

Why it exists (docs/seed.md): a derivative compiled for the host inside a GPU
kernel (the Enzyme.jl `autodiff_deferred` bug) must be impossible. This pass
rejects, naming both ops and both targets:

- a `func.func` with a body, or a `diffgpu.autodiff` / `diffgpu.fwddiff`,
  without `diffgpu.target` (an `#nvvm.target` or `#llvm.target`);
- an op carrying `diffgpu.target` nested in another one with a different target;
- a `func.call`, or an autodiff/fwddiff, whose callee has another target;
- a function inside a `gpu.module` whose target is not one of the module's;
- an `#nvvm.target` naming a chip the NVPTX backend does not know.

    func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<...>}
    func.func @k(%x: f32) attributes {diffgpu.kernel,
                                      diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
      %y = func.call @f(%x) : (f32) -> f32
      // error: 'func.call' to @f crosses targets: caller @k has sm_90
      //        (#nvvm.target<O = 3, chip = "sm_90">), callee @f has host (#llvm.target<...>)
      return
    }

External declarations (`func.func private @g(f32) -> f32`, no body) hold no
code and need no target; calls to one that has a target are still checked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import sym_name
from diffgpu.lowering.registry import ModulePass, register_pass

DIFF_OPS = N.DIFF
FUNC_OPS = ("func.func", "gpu.func")
SYMBOL_TABLES = ("builtin.module", "gpu.module")


def _op(x):
    return getattr(x, "operation", x)


def _label(op) -> str:
    """`'func.func' @k`, or just `'func.call'` for ops without a symbol."""
    op = _op(op)
    name = sym_name(op)
    return f"'{op.name}' @{name}" if name else f"'{op.name}'"


def _who(op) -> str:
    """`@k` for symbols, `'op.name'` otherwise (used after `caller`)."""
    name = sym_name(op)
    return f"@{name}" if name else f"'{_op(op).name}'"


#: the chip of an `#nvvm.target` that names none (MLIR omits the default
#: when printing: `#nvvm.target<O = 3>` is sm_50)
DEFAULT_CHIP = "sm_50"


def _chip(attr) -> str:
    return targets.chip_of(attr) or DEFAULT_CHIP


def _t(attr) -> str:
    """`sm_90 (#nvvm.target<...>)`."""
    name = _chip(attr) if targets.is_gpu(attr) else targets.describe(attr)
    return f"{name} ({attr})"


def _has_body(op) -> bool:
    op = _op(op)
    return len(op.regions) > 0 and len(op.regions[0].blocks) > 0


def _children(op):
    for region in _op(op).regions:
        for block in region.blocks:
            for child in block.operations:
                yield _op(child)


def _symbol_path(attr) -> list[str]:
    """`@a::@b` -> ["a", "b"]; accepts FlatSymbolRefAttr / SymbolRefAttr."""
    from diffgpu._mlir import ir

    attr = attr.maybe_downcast() if hasattr(attr, "maybe_downcast") else attr
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return [attr.value]
    return list(ir.SymbolRefAttr(attr).value)


@register_pass
@dataclass
class VerifyTargets(ModulePass):
    """Reject missing targets and any nesting, call or autodiff across targets.

    Input that passes: every function and autodiff op carries the same
    `diffgpu.target` as the functions around and under it.
    """

    name: ClassVar[str] = "diffgpu-verify-targets"
    summary: ClassVar[str] = ("check that every function and autodiff op has a target, "
                              "equal to its parent's and its callees'")

    def run(self, module) -> None:
        module = _op(module)
        self._symbols: dict = {}
        self._walk(module, parent=None, gpu_module=None)

    # -- traversal -----------------------------------------------------------
    def _walk(self, op, parent, gpu_module) -> None:
        """`parent`: the nearest enclosing op carrying a target (or None)."""
        name = op.name
        attr = targets.get_target(op)
        if name == "gpu.module":
            self._check_gpu_module(op)
            gpu_module = op
        if attr is not None:
            self._check_attr(op, attr)
        elif (name == "func.func" and _has_body(op)) or name in DIFF_OPS:
            self.error(op, f"{_label(op)} has no {targets.TARGET_ATTR}")
        if attr is not None and parent is not None:
            pattr = targets.get_target(parent)
            if pattr != attr:
                self.error(op, f"{_label(op)} has target {_t(attr)} but its parent "
                               f"{_label(parent)} has {_t(pattr)}")
        if attr is not None and gpu_module is not None and name in FUNC_OPS:
            self._check_in_gpu_module(op, attr, gpu_module)
        if name == "func.call":
            self._check_call(op, parent)
        elif name in DIFF_OPS:
            self._check_diff(op, attr, parent)
        inner = op if attr is not None else parent
        for child in _children(op):
            self._walk(child, inner, gpu_module)

    # -- checks --------------------------------------------------------------
    def _check_attr(self, op, attr) -> None:
        if not (targets.is_gpu(attr) or targets.is_host(attr)):
            self.error(op, f"{_label(op)} has {targets.TARGET_ATTR} = {attr}, expected "
                           "an #nvvm.target or #llvm.target attribute")
            return
        self._check_chip(op, attr)

    def _check_chip(self, op, attr) -> None:
        if targets.is_gpu(attr):
            try:
                targets.check_chip(_chip(attr))
            except targets.TargetError as exc:
                self.error(op, f"{_label(op)} has target {attr}: {exc}")

    def _check_gpu_module(self, op) -> None:
        if "targets" not in op.attributes:
            return
        for t in op.attributes["targets"]:
            self._check_chip(op, t)

    def _check_in_gpu_module(self, op, attr, gmod) -> None:
        allowed = list(gmod.attributes["targets"]) if "targets" in gmod.attributes else []
        if not any(t == attr for t in allowed):
            have = ", ".join(_t(t) for t in allowed) or "no targets"
            self.error(op, f"{_label(op)} has target {_t(attr)} but its "
                           f"{_label(gmod)} has {have}")

    def _check_call(self, call, parent) -> None:
        if parent is None or "callee" not in call.attributes:
            return
        callee = self._lookup(call, call.attributes["callee"])
        if callee is None:
            return  # func.call's own verifier reports unknown symbols
        cattr, pattr = targets.get_target(callee), targets.get_target(parent)
        if cattr is None or cattr == pattr:
            return  # a missing target on a defined callee is reported on it
        self.error(call, f"'{call.name}' to @{sym_name(callee)} crosses targets: caller "
                         f"{_who(parent)} has {_t(pattr)}, callee @{sym_name(callee)} has {_t(cattr)}")

    def _check_diff(self, op, attr, parent) -> None:
        if "callee" not in op.attributes:
            return  # the IRDL verifier requires it
        ref = op.attributes["callee"]
        callee = self._lookup(op, ref)
        if callee is None:
            self.error(op, f"'{op.name}' refers to unknown function {ref}")
            return
        cattr = targets.get_target(callee)
        pattr = targets.get_target(parent) if parent is not None else None
        where = f" in {_who(parent)}" if parent is not None else ""
        if cattr is None:
            return  # reported on the callee itself
        if attr is not None and cattr != attr:
            self.error(op, f"'{op.name}' of @{sym_name(callee)} crosses targets: '{op.name}'"
                           f"{where} has {_t(attr)}, callee @{sym_name(callee)} has {_t(cattr)}")
        elif pattr is not None and cattr != pattr:
            self.error(op, f"'{op.name}' of @{sym_name(callee)} crosses targets: caller "
                           f"{_who(parent)} has {_t(pattr)}, callee @{sym_name(callee)} has {_t(cattr)}")

    # -- symbols -------------------------------------------------------------
    def _table(self, op) -> dict:
        """Symbols directly held by the symbol table `op` (cached)."""
        if op not in self._symbols:  # Operation hashes/compares by identity in MLIR
            table = {}
            for child in _children(op):
                s = sym_name(child)
                if s is not None:
                    table[s] = child
            self._symbols[op] = table
        return self._symbols[op]

    def _lookup(self, frm, ref):
        """Resolve a symbol reference like MLIR's lookupNearestSymbolFrom."""
        scope = _op(frm).parent
        while scope is not None and _op(scope).name not in SYMBOL_TABLES:
            scope = _op(scope).parent
        if scope is None:
            return None
        op = _op(scope)
        for part in _symbol_path(ref):
            op = self._table(op).get(part)
            if op is None:
                return None
        return op
