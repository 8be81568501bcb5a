"""Random differentiable kernels for the gradient fuzzer (fuzz_gradients.py).

`random_case(seed)` returns a `Case`: the Python source of a module holding
one `@dg.kernel` named `kk` and up to two `@dg.func`s (`g0`, `g1`), plus the
launch data. Every kernel has the signature

    kk(x, y, w, m, n, f)   x: float array read by every thread
                           y: float array, thread i reads and overwrites y[i]
                           w: float array, thread i writes w[i] (several times)
                           m: int32 array (runtime loop bounds), n: int, f: float

and its body mixes arithmetic, math calls (kept bounded: exp(tanh(.)),
log(1 + e*e), division by 1 + e*e), `if`/`else`, `for j in range(...)` with
runtime bounds and steps, `while` loops with a counter, `and`/`or` (on
numbers: their value is an operand's), `break`,
`continue`, early `return` (also inside loops), calls to the `@dg.func`s
(whose own bodies have loops with early returns), and several writes to the
same element. Each thread touches only its own elements of y and w, so there
is no data race and the thread-by-thread Python run is the reference.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

N_ELEMS = 6
GRID, BLOCK = 2, 4  # 8 threads for 6 elements: the bounds guard returns early

KERNEL_FLOATS = ["a", "b", "c"]
FUNC_FLOATS = ["p", "q", "r"]


@dataclass
class Case:
    seed: int
    source: str
    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    m: np.ndarray
    n: int
    f: float
    funcs: list = field(default_factory=list)

    def inputs_repr(self) -> str:
        np.set_printoptions(precision=17, floatmode="unique")
        return (f"x = np.{self.x!r}\ny = np.{self.y!r}\nw = np.{self.w!r}\n"
                f"m = np.{self.m!r}\nn = {self.n!r}\nf = {self.f!r}")


class _Gen:
    def __init__(self, rng: random.Random, floats, leaves, in_func, funcs, max_depth=2,
                 hard=False):
        self.rng, self.floats, self.leaves, self.hard = rng, floats, leaves, hard
        self.in_func, self.funcs, self.max_depth = in_func, funcs, max_depth
        self.loop_vars: list[str] = []
        self.n_counters = 0

    # expressions -----------------------------------------------------------
    def leaf(self):
        r = self.rng
        pool = self.floats + self.leaves + ["0.5", "1.5", "-0.75", "2.0"]
        if self.loop_vars and r.random() < 0.15:
            return f"({r.choice(self.loop_vars)} * 0.25)"
        return r.choice(pool)

    def expr(self, d=0):
        r = self.rng
        if d >= 3 or r.random() < 0.35:
            return self.leaf()
        c = r.random()
        sub = lambda: self.expr(d + 1)  # noqa: E731
        if self.hard and r.random() < 0.3:
            return self.hard_expr(sub)
        if c < 0.35:
            return f"({sub()} {r.choice(['+', '-', '*', '+', '*'])} {sub()})"
        if c < 0.42:
            e = sub()
            return f"({sub()} / (1.0 + {e} * {e}))"
        if c < 0.62:
            e = sub()
            return r.choice([f"math.sin({e})", f"math.cos({e})", f"dg.tanh({e})",
                             f"math.exp(dg.tanh({e}))", f"math.log(1.0 + {e} * {e})",
                             f"math.sqrt(1.0 + {e} * {e})", f"dg.erf({e})",
                             f"math.atan2({e}, 1.5)", f"({e}) ** 2", f"np.tanh({e})"])
        if c < 0.7:
            return f"{r.choice(['min', 'max'])}({sub()}, {sub()})"
        if c < 0.75:
            return f"abs({sub()})"
        if c < 0.82:
            return f"({sub()} if {self.cond(d + 1)} else {sub()})"
        if c < 0.86:  # Python's value semantics: the deciding operand
            return f"({sub()} {r.choice(['and', 'or'])} {sub()})"
        if c < 0.92 and self.funcs:
            g = r.choice(self.funcs)
            return f"{g}({sub()}, {sub()}, {self.int_bound()})"
        return f"(-{sub()})"

    def hard_expr(self, sub):
        """--hard: piecewise and integer-valued functions, powf, gathers
        through the int array, 3-argument max. (An atomic's old value is not
        used: its derivative is refused with a CompileError, by design.)"""
        r = self.rng
        forms = [lambda: f"abs({sub()}) ** 1.5", lambda: f"math.pow(1.0 + abs({sub()}), 0.75)",
                 lambda: f"({sub()} % 1.5)", lambda: f"({sub()} // 0.7)",
                 lambda: f"float(math.floor({sub()}))", lambda: f"round({sub()})",
                 lambda: f"max({sub()}, {sub()}, {sub()})", lambda: f"math.expm1(dg.tanh({sub()}))",
                 lambda: f"math.copysign({sub()}, {sub()})"]
        if not self.in_func:
            forms += [lambda: "x[m[i] % len(x)]",
                      lambda: f"float(int({sub()} * 2.0))"]
        return r.choice(forms)()

    def cond(self, d=0):
        r = self.rng
        c = r.random()
        if c < 0.6:
            return f"{self.expr(d + 1)} {r.choice(['>', '<', '>=', '<='])} {r.choice(['0.3', '-0.2', '1.0', '0.0'])}"
        if c < 0.75 and self.loop_vars:
            bound = "k - 2" if self.in_func else "n - 2"
            return f"{r.choice(self.loop_vars)} {r.choice(['>', '<', '=='])} {r.choice(['1', '2', bound])}"
        if c < 0.85 and not self.in_func:
            return f"m[i] {r.choice(['>', '<'])} {r.choice(['1', '2'])}"
        if c < 0.9:
            return f"({self.cond(d + 1)} {r.choice(['and', 'or'])} {self.cond(d + 1)})"
        return f"{self.expr(d + 1)} > {self.expr(d + 1)}"

    def int_bound(self):
        opts = ["k", "2", "k + 1"] if self.in_func else ["n", "m[i]", "2", "m[i] + 1"]
        if self.hard:
            opts = opts + [f"int(abs({self.leaf()})) % 3", "max(k, 1)" if self.in_func
                           else "min(m[i], n)"]
        return self.rng.choice(opts)

    # statements -------------------------------------------------------------
    def assign(self, p):
        r = self.rng
        if self.hard and r.random() < 0.2:
            v1, v2 = r.sample(self.floats, 2)
            forms = [f"{v1}, {v2} = {v2}, {v1}", f"{v1} /= 1.0 + {self.expr(1)} ** 2"]
            if not self.in_func:
                forms += [f"dg.atomic_add(w, i, {self.expr(1)})", f"y[i] -= {self.expr(1)}"]
            return [p + r.choice(forms)]
        if not self.in_func and r.random() < 0.35:
            tgt = r.choice(["y[i]", "w[i]", "w[i]", "y[i]"])
        else:
            tgt = r.choice(self.floats)
        op = r.choice(["=", "+=", "-=", "*=", "="])
        e = self.expr()
        if op == "*=":
            e = f"dg.tanh({e})"  # keep products bounded
        return [f"{p}{tgt} {op} {e}"]

    def ret(self, p):
        if self.in_func:
            return [f"{p}return {self.expr(1)}"]
        return [f"{p}return"]

    def block(self, depth, ind, in_loop=False):
        r, p, out = self.rng, "    " * ind, []
        for _ in range(r.randint(1, 3)):
            c = r.random()
            if c < 0.4 or depth >= self.max_depth:
                out += self.assign(p)
            elif c < 0.58:
                out += [f"{p}if {self.cond()}:"] + self.block(depth + 1, ind + 1, in_loop)
                if r.random() < 0.5:
                    out += [f"{p}else:"] + self.block(depth + 1, ind + 1, in_loop)
            elif c < 0.74:
                j = f"j{len(self.loop_vars)}"
                b = self.int_bound()
                rg = r.choice([b, f"{b}", f"1, {b}", f"{b}, 0, -1", f"0, {b}, 2"])
                self.loop_vars.append(j)
                out += [f"{p}for {j} in range({rg}):"] + self.block(depth + 1, ind + 1, True)
                if r.random() < 0.25:
                    out += [f"{p}    if {self.cond()}:", f"{p}        break"]
                if r.random() < 0.2:
                    out += [f"{p}    if {self.cond()}:", f"{p}        continue"]
                if r.random() < 0.3:
                    out += self.assign(p + "    ")
                self.loop_vars.pop()
            elif c < 0.86:
                cnt = f"t{self.n_counters}"
                self.n_counters += 1
                out += [f"{p}{cnt} = 0",
                        f"{p}while {cnt} < {self.int_bound()} and ({self.cond()}):"]
                out += self.block(depth + 1, ind + 1, True) + [f"{p}    {cnt} += 1"]
            else:
                out += [f"{p}if {self.cond()}:"] + self.ret(p + "    ")
        return out


def _func_source(rng, name, others, hard=False):
    g = _Gen(rng, FUNC_FLOATS, [], True, others, max_depth=2, hard=hard)
    body = g.block(0, 1)
    return ["@dg.func", f"def {name}(p, q, k):", "    r = p * 0.5 + q", *body,
            f"    return {g.expr(1)}", "", ""]


def random_case(seed: int, hard: bool = False) -> Case:
    """The case of `seed`; `hard` adds piecewise functions (%, //, floor,
    round), powf, atomic adds, gathers through m, swaps."""
    rng = random.Random(seed * 2 + 1 if hard else seed)
    funcs: list[str] = []
    src = ["import math", "", "import numpy as np", "", "import diffgpu as dg", "", ""]
    for k in range(rng.choice([0, 1, 1, 2])):
        name = f"g{k}"
        src += _func_source(rng, name, list(funcs), hard)
        funcs.append(name)
    g = _Gen(rng, KERNEL_FLOATS, ["x[i]", "x[(i + 1) % len(x)]", "y[i]", "f"], False, funcs,
             hard=hard)
    body = g.block(0, 1)
    src += ["@dg.kernel", "def kk(x, y, w, m, n, f):", "    i = dg.global_id(0)",
            "    if i >= len(x):", "        return", "    a = x[i]", "    b = f * y[i]",
            "    c = 0.25", *body, "    y[i] = y[i] * 0.5 + a", "    w[i] = w[i] + b * c", ""]
    nrng = np.random.default_rng(seed)
    return Case(seed, "\n".join(src), nrng.uniform(-1.5, 1.5, N_ELEMS),
                nrng.uniform(-1.5, 1.5, N_ELEMS), nrng.uniform(-1.5, 1.5, N_ELEMS),
                nrng.integers(0, 4, N_ELEMS).astype(np.int32), int(nrng.integers(1, 4)),
                float(nrng.uniform(-1, 1)), funcs)
