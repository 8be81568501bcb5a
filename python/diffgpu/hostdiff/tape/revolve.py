"""Binomial checkpointing (Griewank's Revolve): the order in which the
reverse of `n` steps runs with at most `c` states held.

A state is the contents of every buffer the program writes, between two
steps. The reverse of step j needs the state before step j. With `c`
checkpoint slots (the one holding state 0 included) and one working state,
`schedule(n, c)` returns actions

    ("advance", a, b)   run steps a .. b-1 forward on the working state
    ("store", t)        copy the working state (at t) into a free slot
    ("restore", t)      copy slot t into the working state
    ("free", t)         slot t is no longer needed
    ("reverse", j, t)   run the reverse of step j on the working state (at j),
                        or on slot t's state when t is not None (no copy)

with the least number of advanced steps for `c` slots: Griewank's bound
`forward_steps(n, c) = r*n - C(c+r, r-1)` where r is the least integer
with `C(c+r, c) >= n` (O(n log n) steps for c ~ log n; c = sqrt(n) gives
r <= 2). Each segment [s, e) with state s in a slot is split at the m
that reaches the bound: advance to s+m, store it, reverse [s+m, e) with
one slot less, free it, restore s and reverse [s, s+m).
"""
from __future__ import annotations

from functools import lru_cache
from math import comb


def _beta(c: int, r: int) -> int:
    return comb(c + r, c) if r >= 0 else 0


def repetitions(n: int, c: int) -> int:
    """The least r with C(c+r, c) >= n: how often a step may be recomputed."""
    r = 0
    while _beta(c, r) < n:
        r += 1
    return r


@lru_cache(maxsize=None)
def forward_steps(n: int, c: int) -> int:
    """The least number of steps advanced to reverse n steps with c slots."""
    if n <= 1:
        return 0
    if c <= 1:
        return n * (n - 1) // 2
    r = repetitions(n, c)
    return r * n - _beta(c + 1, r - 1)


@lru_cache(maxsize=None)
def split(n: int, c: int) -> int:
    """Where to store the next checkpoint of a segment of n steps with c
    slots (state s in one of them), 1 <= m < n: the largest m reaching the
    bound (fewest restores after it)."""
    best = forward_steps(n, c)
    r = repetitions(n, c)
    # the optimal first checkpoint sits in [n - C(c-1+r, r-1)... ]: search
    # from the largest segment the remaining slots reverse with r-1 repetitions
    for m in range(n - 1, 0, -1):
        if m + forward_steps(n - m, c - 1) + forward_steps(m, c) == best:
            return m
    raise AssertionError(f"no split of {n} steps with {c} slots reaches {best} (r={r})")


def schedule(n: int, c: int) -> list:
    """The actions reversing steps 0 .. n-1 with c >= 1 slots, state 0 in slot 0."""
    if c < 1:
        raise ValueError("checkpointing needs at least one slot")
    out: list = []
    _rev(0, n, c, out, [0])
    return out


def _rev(s: int, e: int, c: int, out: list, at: list) -> None:
    """Reverse steps s .. e-1; state s is in a slot and `at[0]` is where the
    working state is (s, or later after a step's reverse)."""
    n = e - s
    if n <= 0:
        return
    if n == 1:
        _reverse_at(s, out, at)
        return
    if c <= 1:
        for j in range(e - 1, s, -1):
            _goto(s, j, out, at)
            out.append(("reverse", j, None))
        _reverse_at(s, out, at)
        return
    m = split(n, c)
    _goto(s, s + m, out, at)
    out.append(("store", s + m))
    _rev(s + m, e, c - 1, out, at)
    out.append(("free", s + m))
    _rev(s, s + m, c, out, at)


def _reverse_at(s: int, out: list, at: list) -> None:
    """Reverse step s, whose state is in a slot: read from the slot itself
    unless the working state is at s (the reverse only reads the state, and
    every later action restores before it advances)."""
    out.append(("reverse", s, None if at[0] == s else s))


def _goto(s: int, t: int, out: list, at: list) -> None:
    """Bring the working state to t from the slot holding s (no restore
    when it is already between s and t)."""
    if not s <= at[0] <= t:
        out.append(("restore", s))
        at[0] = s
    if at[0] < t:
        out.append(("advance", at[0], t))
        at[0] = t


def counts(actions) -> dict:
    """{"advanced": steps run forward, "peak": most slots held at once
    (slot 0 included), "restores": states copied back, "reversed": steps}."""
    held, peak, adv, rest, rev = 1, 1, 0, 0, 0
    for a in actions:
        if a[0] == "advance":
            adv += a[2] - a[1]
        elif a[0] == "store":
            held += 1
            peak = max(peak, held)
        elif a[0] == "free":
            held -= 1
        elif a[0] == "restore":
            rest += 1
        else:
            rev += 1
    return {"advanced": adv, "peak": peak, "restores": rest, "reversed": rev}


__all__ = ["schedule", "forward_steps", "repetitions", "split", "counts"]
