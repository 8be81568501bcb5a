"""Does compiled code take the arguments its payload says it takes?

The runtime packs a launch's arguments by the payload's claims (its
`flat_types`, and for PTX its `lean` layout and argument descriptors), not by
the code. Code compiled for other types under those claims (float64 code in a
float32 record, digests recomputed) would read and write past the memory it
is given. So a cache entry or a bundle entry is checked against the argument
layout its code declares (abi.py has the ABI):

- PTX: the `.param`s of its `.entry`: a rank-r array is 3 + 2r 64-bit words
  (1 + r under the lean ABI), a scalar one parameter of its width and kind
  (`.f32`, `.f64`; `.u32`/`.s32`/`.b32` for int32, ...), and a per-launch
  scratch SCRATCH_WORDS words;
- host code: the C-interface function the runtime calls takes a pointer per
  array, a value of its type per scalar, two scratch pointers, then grid and
  block (six i64); the entry it calls takes each array's descriptor words
  (`ptr, ptr, i64, i64 x 2r`): the array ranks.

Pointers carry no element type, so an array of another dtype and the same
rank is not caught here (a bundle is code: see driver/bundle.py).

    problem(payload)   # None, or why the code does not fit the payload
"""
from __future__ import annotations

import re

from diffgpu.abi import (CIFACE_PREFIX, ENTRY_PREFIX, SCRATCH_ATTR, SCRATCH_WORDS,
                         memref_words, parse_scratch, scratch_slots, user_descriptors)
from diffgpu.types import DTYPES, ArrayType

#: PTX parameter kinds each declared kind may be (width, then float or not)
_PTX_KINDS = {"i32": ("u32", "s32", "b32"), "i64": ("u64", "s64", "b64"),
              "f32": ("f32", "b32"), "f64": ("f64", "b64")}
_PTX_TYPE = re.compile(r"\.([usbf]\d+)\b")
_LLVM_PARAM = re.compile(r"%[\w$.-]+\s*:\s*([^\s,{]+)")


def problem(payload: dict) -> str | None:
    """Why the code in a "gpu" or "host" `payload` does not take the
    arguments its `flat_types` (and layout fields) describe, or None."""
    from diffgpu.runtime.args import parse_type

    try:
        types = [parse_type(t) for t in payload["flat_types"]]
    except (KeyError, TypeError, ValueError) as exc:
        return f"its argument types cannot be read ({exc})"
    if payload.get("kind") == "gpu":
        return _ptx_problem(payload, types)
    return _host_problem(payload, types)


def _descriptors(types) -> list:
    return [["memref", t.ndim, t.dtype] if isinstance(t, ArrayType) else ["scalar", t.dtype]
            for t in types]


def _ptx_problem(payload: dict, types) -> str | None:
    entry, ptx, abi = payload.get("entry"), payload.get("ptx"), payload.get("abi")
    lean, slots = payload.get("lean"), 0
    if not isinstance(entry, str) or not isinstance(ptx, str):
        return "no PTX entry"
    if lean is not None and not isinstance(lean, list):
        return f"malformed lean layout {lean!r:.100}"
    lean = [bool(x) for x in lean or ()]  # as runtime/gpu.py reads it
    if abi is not None:
        try:
            user, slots = user_descriptors(abi), scratch_slots(abi)
        except (TypeError, ValueError, IndexError, KeyError):
            user = slots = None
        if user is None or [list(d) for d in user] != _descriptors(types):
            return f"its argument descriptors {abi!r:.200} are not its arguments'"
    want = []
    for i, t in enumerate(types):
        if isinstance(t, ArrayType):
            lean_i = i < len(lean) and lean[i]
            want += ["i64"] * (1 + t.ndim if lean_i else memref_words(t.ndim))
        else:
            want.append(DTYPES[t.dtype])
    if slots:
        want += ["i64"] * SCRATCH_WORDS
    m = re.search(rf"\.entry\s+{re.escape(entry)}\s*\(([^)]*)\)", ptx)
    if m is None:
        return f"its PTX has no .entry {entry}"
    params = [p for p in m.group(1).split(",") if p.strip()]
    got = []
    for p in params:
        kind = _PTX_TYPE.search(p)
        got.append("struct" if kind is None or "[" in p else kind.group(1))
    if len(got) != len(want):
        return (f"its PTX entry {entry} takes {len(got)} parameters, its arguments "
                f"({_sig(types)}) are {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g not in _PTX_KINDS[w]:
            return f"parameter {i} of its PTX entry {entry} is .{g}, its arguments need {w}"
    return None


def _llvm_params(text: str, symbol: str) -> list | None:
    """The parameter types of `llvm.func @symbol`, or None (no such function)."""
    head = f"llvm.func @{symbol}("
    start = text.find(head)  # (str.find: a module is often megabytes)
    if start < 0:
        return None
    start += len(head)
    params = text[start:text.find(")", start)]
    return ["ptr" if t == "!llvm.ptr" else t for t in _LLVM_PARAM.findall(params)]


def _host_problem(payload: dict, types) -> str | None:
    entry, text = payload.get("entry"), payload.get("llvm")
    if not isinstance(entry, str) or not isinstance(text, str):
        return "no host entry"
    symbol = ENTRY_PREFIX + entry  # as runtime/cpu.py finds it
    if f"@{CIFACE_PREFIX}{symbol}(" not in text:
        symbol = entry
    header = text[:text.find("\n")]  # `module attributes {...} {`
    scratch = re.search(rf"{re.escape(SCRATCH_ATTR)}\s*=\s*\[([^\]]*)\]", header)
    slots = parse_scratch(re.findall(r'"([^"]*)"', scratch.group(1))) if scratch else {}
    extra = 2 if slots.get(entry) else 0
    call, words = [], []
    for t in types:
        if isinstance(t, ArrayType):
            call.append("ptr")
            words += ["ptr", "ptr"] + ["i64"] * (memref_words(t.ndim) - 2)
        else:
            call.append(DTYPES[t.dtype])
            words.append(DTYPES[t.dtype])
    call += ["ptr"] * extra + ["i64"] * 6
    words += (["ptr", "ptr"] + ["i64"] * (memref_words(1) - 2)) * extra + ["i64"] * 6
    for name, want in ((CIFACE_PREFIX + symbol, call), (symbol, words)):
        got = _llvm_params(text, name)
        if got is None:
            return f"its host code has no function @{name}"
        if got != want:
            return (f"its host function @{name} takes ({', '.join(got)}), its arguments "
                    f"({_sig(types)}) need ({', '.join(want)})")
    return None


def _sig(types) -> str:
    return ", ".join(str(t) for t in types)
