"""Diagnostics of diffgpu-opt: collect MLIR's, print them like mlir-opt, and
check them against `expected-*` comments (`--verify-diagnostics`).

A buffer is parsed under the name `-` (MLIR's Python bindings name every
parsed buffer so); locations in it are shown with the real file name and, as
mlir-opt does, the source line and a caret.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

BUFFER_NAME = "-"  # the file name MLIR gives locations of a parsed string
CURRENT_OP_NOTE = "see current operation"
WHOLE_INPUT = ""  # Diag.file of a diagnostic about the whole input (no line)

_SEVERITY = {"ERROR": "error", "WARNING": "warning", "NOTE": "note", "REMARK": "remark"}


@dataclass
class Diag:
    severity: str  # error | warning | note | remark
    message: str
    file: str | None = None  # None: unknown location
    line: int = 0
    col: int = 0
    notes: list["Diag"] = field(default_factory=list)

    @property
    def in_buffer(self) -> bool:
        return self.file == BUFFER_NAME


def resolve_loc(loc, depth: int = 0):
    """(file, line, col) of an MLIR Location, or None if it has no file."""
    if loc is None or depth > 32:
        return None
    try:
        if loc.is_a_file():
            return (loc.filename, loc.start_line, loc.start_col)
        if loc.is_a_name():
            return resolve_loc(loc.child_loc, depth + 1)
        if loc.is_a_callsite():
            return resolve_loc(loc.callee, depth + 1)
        if loc.is_a_fused():
            for sub in loc.locations:
                r = resolve_loc(sub, depth + 1)
                if r is not None:
                    return r
    except Exception:  # an unusual location kind: treat as unknown
        return None
    return None


def from_mlir(d) -> Diag:
    """Convert an MLIR Diagnostic / DiagnosticInfo (copying everything)."""
    sev = _SEVERITY.get(str(d.severity).rsplit(".", 1)[-1].upper(), "error")
    where = resolve_loc(d.location)
    out = Diag(sev, str(d.message))
    if where is not None:
        out.file, out.line, out.col = where
    out.notes = [from_mlir(n) for n in d.notes]
    for n in out.notes:
        n.severity = "note"
    return out


class Printer:
    """Writes diagnostics as `FILE:LINE:COL: error: message` + source line."""

    def __init__(self, display_name: str, lines: list[str], stream):
        self.name, self.lines, self.stream = display_name, lines, stream

    def where(self, d: Diag) -> str:
        if d.file is None:
            return "<unknown>:0"
        if d.file == WHOLE_INPUT:
            return self.name
        name = self.name if d.in_buffer else d.file
        return f"{name}:{d.line}:{d.col}"

    def emit(self, d: Diag, with_notes: bool = True) -> None:
        self.stream.write(f"{self.where(d)}: {d.severity}: {d.message}\n")
        if d.in_buffer and 1 <= d.line <= len(self.lines):
            src = self.lines[d.line - 1].rstrip("\r\n")
            self.stream.write(src + "\n")
            caret = "".join(c if c == "\t" else " " for c in src[:max(d.col - 1, 0)])
            self.stream.write(caret + "^\n")
        if with_notes:
            for n in d.notes:
                self.emit(n)



# ---------------------------------------------------------------------------
# --verify-diagnostics
# ---------------------------------------------------------------------------

_EXPECTED = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}\s*$")


@dataclass
class Expected:
    kind: str
    text: str
    line: int  # target line (1-based); 0 for @unknown
    where: tuple[int, int]  # line, col of the comment itself
    regex: re.Pattern | None = None
    matched: bool = False

    def match(self, message: str) -> bool:
        if self.regex is not None:
            return self.regex.search(message) is not None
        return self.text in message


def _re_text(text: str) -> re.Pattern:
    """`-re` text: `{{regex}}` parts are regexes, the rest is literal."""
    out, i = [], 0
    while i < len(text):
        j = text.find("{{", i)
        if j < 0:
            out.append(re.escape(text[i:]))
            break
        out.append(re.escape(text[i:j]))
        k = text.find("}}", j + 2)
        if k < 0:
            raise ValueError(f"unterminated '{{{{' in expected-*-re text {text!r}")
        out.append("(?:" + text[j + 2:k] + ")")
        i = k + 2
    return re.compile("".join(out))


def parse_expected(lines: list[str], first: int, last: int):
    """Expected diagnostics in lines[first:last] (0-based, end excluded).

    Returns (expectations, errors) where errors are (line, col, message) for
    malformed designators (an `@below` with no line after it, a bad regex).
    """
    found: list[Expected] = []
    errors = []
    pending_below: list[Expected] = []
    last_plain = 0
    for idx in range(first, last):
        text = lines[idx]
        m = _EXPECTED.search(text)
        lineno = idx + 1
        if m is None:
            for e in pending_below:
                e.line = lineno
            pending_below = []
            last_plain = lineno
            continue
        kind, is_re, offset, body = m.group(1), m.group(2), m.group(4), m.group(5)
        e = Expected(kind, body, lineno, (lineno, m.start() + 1))
        if is_re:
            try:
                e.regex = _re_text(body)
            except (ValueError, re.error) as exc:
                errors.append((lineno, m.start() + 1, f"invalid regular expression: {exc}"))
                continue
        if offset == "unknown":
            e.line = 0
        elif offset == "above":
            e.line = last_plain
        elif offset == "below":
            pending_below.append(e)
        elif offset:
            e.line = lineno + int(offset)
        found.append(e)
    for e in pending_below:
        errors.append((*e.where, "found 'expected-*@below' but no line below it"))
    return found, errors


def verify(diags: list[Diag], expected: list[Expected]) -> list[Diag]:
    """Mismatches as error diagnostics (empty when everything matched)."""
    problems: list[Diag] = []
    flat: list[Diag] = []
    for d in diags:
        flat.append(d)
        flat.extend(n for n in d.notes if not n.message.startswith(CURRENT_OP_NOTE))
    for d in flat:
        line = d.line if d.in_buffer else 0
        near = None
        ok = False
        for e in expected:
            if e.line == line and e.match(d.message):
                if e.kind == d.severity:
                    e.matched = ok = True
                    break
                near = e
        if ok:
            continue
        where = (d.file, d.line, d.col)
        if near is not None:
            msg = (f"'{d.severity}' diagnostic emitted when expecting a '{near.kind}'")
        else:
            msg = f"unexpected {d.severity}: {d.message}"
        problems.append(Diag("error", msg, *where))
    for e in expected:
        if not e.matched:
            problems.append(Diag("error", f"expected {e.kind} \"{e.text}\" was not produced",
                                 BUFFER_NAME, *e.where))
    return problems
