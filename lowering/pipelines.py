"""Textual pipelines: parsing, option checking, expansion, PassManagers.

    elements = parse_pipeline("diffgpu-to-ptx{chip=sm_90},canonicalize")
    pm = build_pass_manager("diffgpu-to-ptx{chip=sm_90}", ctx)

`build_pass_manager(text)` turns any textual pipeline into an MLIR
PassManager: upstream passes by their own names, ours (passes.py) as Python
passes, options validated before MLIR sees them (MLIR aborts on some bad
options). Our pipelines expand recursively into their elements.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from diffgpu.lowering.passes import (_PASSES, _PIPELINES, _PROMISES, _UPSTREAM_CHECKS,
                                     load_all)


class PipelineError(ValueError):
    """A pipeline text, pass name or option that cannot run."""


@dataclass
class Element:
    """One element of a textual pipeline: `name{options}(nested, ...)`."""
    name: str
    options: str | None = None  # raw text between the braces
    nested: list["Element"] | None = None

    def text(self) -> str:
        s = self.name
        if self.options is not None:
            s += "{" + self.options + "}"
        if self.nested is not None:
            s += "(" + ",".join(e.text() for e in self.nested) + ")"
        return s


def parse_pipeline(text: str) -> list[Element]:
    """Parse `a,b{x=1},gpu.module(c)` (optionally wrapped in builtin.module)."""
    p = _Parser(text)
    elems = p.elements()
    p.skip_ws()
    if p.i != len(p.s):
        raise PipelineError(f"unexpected {p.s[p.i]!r} at column {p.i + 1} of pipeline {text!r}")
    if len(elems) == 1 and elems[0].name == "builtin.module" and elems[0].nested is not None:
        if elems[0].options is not None:
            raise PipelineError("builtin.module takes no options")
        return elems[0].nested
    return elems


class _Parser:
    def __init__(self, s: str):
        self.s, self.i = s, 0

    def skip_ws(self):
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def elements(self) -> list[Element]:
        out = []
        self.skip_ws()
        if self.i < len(self.s) and self.s[self.i] == ")":
            return out  # empty nested list: `gpu.module()`
        while True:
            out.append(self.element())
            self.skip_ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
                continue
            return out

    def element(self) -> Element:
        self.skip_ws()
        start = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] in "-_."):
            self.i += 1
        name = self.s[start:self.i]
        if not name:
            got = self.s[self.i] if self.i < len(self.s) else "end of text"
            raise PipelineError(f"expected a pass name at column {self.i + 1} of pipeline "
                                f"{self.s!r}, got {got!r}")
        el = Element(name)
        self.skip_ws()
        if self.i < len(self.s) and self.s[self.i] == "{":
            el.options = self.balanced("{", "}")
            self.skip_ws()
        if self.i < len(self.s) and self.s[self.i] == "(":
            self.i += 1
            el.nested = self.elements()
            self.skip_ws()
            if self.i >= len(self.s) or self.s[self.i] != ")":
                raise PipelineError(f"missing ')' in pipeline {self.s!r}")
            self.i += 1
        return el

    def balanced(self, open_: str, close: str) -> str:
        depth, start = 0, self.i + 1
        quote = None
        while self.i < len(self.s):
            c = self.s[self.i]
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start:self.i - 1]
            self.i += 1
        raise PipelineError(f"missing '{close}' in pipeline {self.s!r}")


def parse_options(text: str | None) -> dict[str, str]:
    """`chip=sm_90 O=3 flag` -> {"chip": "sm_90", "O": "3", "flag": "true"}."""
    return {k: "true" if v is None else v for k, v in _parse_options(text).items()}


def _parse_options(text: str | None) -> dict[str, str | None]:
    """As parse_options, but a bare `flag` gives None (`key=` gives "")."""
    out: dict[str, str | None] = {}
    if not text:
        return out
    i, s = 0, text
    while i < len(s):
        while i < len(s) and s[i].isspace():
            i += 1
        if i >= len(s):
            break
        j = i
        while j < len(s) and not s[j].isspace() and s[j] != "=":
            j += 1
        key = s[i:j]
        if j < len(s) and s[j] == "=":
            j += 1
            if j < len(s) and s[j] in "\"'":
                k = s.find(s[j], j + 1)
                if k < 0:
                    raise PipelineError(f"unterminated value for option {key!r}")
                val, j = s[j + 1:k], k + 1
            elif j < len(s) and s[j] == "{":
                depth, k = 0, j
                while k < len(s):
                    depth += {"{": 1, "}": -1}.get(s[k], 0)
                    if depth == 0:
                        break
                    k += 1
                if k >= len(s):
                    raise PipelineError(f"unterminated value for option {key!r}")
                val, j = s[j:k + 1], k + 1
            else:
                k = j
                while k < len(s) and not s[k].isspace():
                    k += 1
                val, j = s[j:k], k
        else:
            val = None
        if not key:
            raise PipelineError(f"malformed options {text!r}")
        out[key] = val
        i = j
    return out


def make_options(cls: type, text: str | None, owner: str):
    """Fill the dataclass `cls` from option text; unknown or ill-typed -> error."""
    raw = _parse_options(text)
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    kwargs = {}
    for key, val in raw.items():
        f = fields.get(key)
        if f is None:
            known = ", ".join(fields) or "none"
            raise PipelineError(f"'{owner}' has no option '{key}' (options: {known})")
        is_bool = (f.type if isinstance(f.type, str) else f.type.__name__) == "bool"
        if val == "" or (val is None and not is_bool):
            # `chip=` is not "no chip": leaving the option out is
            raise PipelineError(f"option '{key}' of '{owner}' needs a value "
                                f"(got {key + '=' if val == '' else key!r}; leave the "
                                "option out for its default)")
        kwargs[key] = _convert("true" if val is None else val, f.type, owner, key)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise PipelineError(f"bad options for '{owner}': {exc}") from None


def _convert(val: str, typ, owner: str, key: str):
    tname = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    try:
        if tname == "bool":
            if val.lower() in ("1", "true", "on", "yes"):
                return True
            if val.lower() in ("0", "false", "off", "no"):
                return False
            raise ValueError
        if tname == "int":
            return int(val)
        if tname == "float":
            return float(val)
    except ValueError:
        raise PipelineError(f"option '{key}' of '{owner}' expects {tname}, got {val!r}") from None
    return val


def expand(elements: list[Element]) -> list[Element]:
    """Expand our pipelines recursively; checks names and options."""
    load_all()
    out: list[Element] = []
    for el in elements:
        if el.name in _PIPELINES:
            if el.nested is not None:
                raise PipelineError(f"pipeline '{el.name}' takes no nested passes")
            info = _PIPELINES[el.name]
            opts = make_options(info.options, el.options, el.name)
            out.extend(expand([parse_one(t) for t in info.expand(opts)]))
            if el.name in _PROMISES:
                out.extend(expand([parse_one(_PROMISES[el.name])]))
        elif el.name in _PASSES:
            if el.nested is not None:
                raise PipelineError(f"pass '{el.name}' takes no nested passes")
            make_options(_PASSES[el.name], el.options, el.name)  # validate now
            out.append(el)
        else:
            if el.nested is not None:
                for sub in _walk(el.nested):
                    if sub.name in _PASSES or sub.name in _PIPELINES:
                        raise PipelineError(
                            f"'{sub.name}' runs on builtin.module only, not nested in '{el.name}'")
            for sub in [el] + list(_walk(el.nested or [])):
                check = _UPSTREAM_CHECKS.get(sub.name)
                if check is not None:
                    check(parse_options(sub.options))
            out.append(el)
    return out


def _walk(elements):
    for e in elements:
        yield e
        if e.nested:
            yield from _walk(e.nested)


def parse_one(text: str) -> Element:
    els = parse_pipeline(text)
    if len(els) != 1:
        raise PipelineError(f"expected one pipeline element, got {text!r}")
    return els[0]


def build_pass_manager(pipeline, ctx=None):
    """A PassManager running `pipeline` (text, or list of element texts).

    Raises PipelineError, with a clear message, for unknown passes and bad
    options; nothing is added to MLIR before everything has been validated.
    """
    from diffgpu._mlir import passmanager

    if isinstance(pipeline, str):
        elements = parse_pipeline(pipeline) if pipeline.strip() else []
    else:
        elements = [parse_one(t) for t in pipeline]
    elements = expand(elements)
    pm = passmanager.PassManager("builtin.module", context=ctx)
    for el in elements:
        if el.name in _PASSES:
            cls = _PASSES[el.name]
            inst = make_options(cls, el.options, el.name)
            pm.add(inst, name=el.name)
        else:
            _add_upstream(pm, el.text(), ctx)
    return pm


def _add_upstream(pm, text: str, ctx) -> None:
    """Add an upstream element, first on a scratch PassManager: a failed add
    leaves MLIR's PassManager half-modified, and MLIR prints option errors to
    the process's stderr, which we capture into the exception instead."""
    from diffgpu._mlir import passmanager

    scratch = passmanager.PassManager("builtin.module", context=ctx)
    err = _capture_fd2(lambda: scratch.add(text))
    if isinstance(err, tuple):
        exc, printed = err
        msg = str(exc).strip() or printed.strip()
        if printed.strip() and printed.strip() not in msg:
            msg = printed.strip() + ("\n" + msg if msg else "")
        raise PipelineError(f"invalid pass '{text}': {msg}") from None
    pm.add(text)


def _capture_fd2(fn):
    """Run fn with fd 2 redirected to a temp file; return None or (exc, text)."""
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn()
            result = None
        except Exception as exc:  # MLIR raises ValueError for bad pipelines
            result = exc
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        printed = tmp.read().decode("utf-8", "replace")
    if result is None:
        if printed:
            sys.stderr.write(printed)
        return None
    return (result, printed)
