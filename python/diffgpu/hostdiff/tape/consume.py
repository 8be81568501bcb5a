"""The tape's variant of a planned reverse recipe (plan.Call.vjp, run by
replay.Recipe): its caller, the reverse of a recorded launch (reverse.py),
owns the seeds and the scratch and no longer needs the seeds after the
call (an adjoint the reverse replaces), so

- a seed copied into a shadow that Enzyme's convention updates in place
  (kind "dup") is passed itself: the adjoint is updated in place;
- an in-out array's cotangent returned as its gradient (an accumulated,
  "cot" array: `y[i] += ...`) is returned itself: the adjoint stays;
- a read-only parameter whose "dup" shadow is zeros the kernel adds into
  takes the caller's seed ("acc", position): its live adjoint, so the
  kernel's adds land there and no add follows;
- with `scratch`, a fresh buffer made like an argument, uninitialised (an
  "empty" buffer: a gradient written once per element, a primal the
  derivative kernel writes) or a copy of it (the in-out primal the
  derivative kernel overwrites), is the caller's seed ("empty" or "copy",
  index): the reverse gives it an array no longer needed (a dropped
  adjoint; for a copy, with the argument copied into it) instead of a new
  allocation. Those arrays are the caller's own, overlapping no live array
  nor each other, like fresh buffers (`recipe.scratch`: the moved replay's
  no-alias check leaves them out, as it does fresh buffers).

Recipes with rmw finals (their `pre` reads the buffers by index) are left
as they are. Transform a recipe before its first run.
"""
from __future__ import annotations


def consume_seeds(recipe, accumulate=(), scratch=False) -> tuple:
    """Make `recipe` the tape's variant (in place). Returns ({result name:
    the seed key it now is, for the results that are a seed updated in
    place, left as it is or accumulated into}, the names of the seeds the
    kernel updates in place, ((seed key, argument position) per scratch
    buffer the caller gives: key[0] "empty" or "copy", what it must hold))."""
    if recipe.pre is not None or recipe.mode != "reverse":
        return {}, frozenset(), ()
    kinds, names = recipe.diff[1], recipe.kernel.arg_names
    swap = {}  # buffer index -> the seed key that replaces it
    news = []
    for b, (how, (where, what)) in enumerate(recipe.bufs):
        if how == "copy" and where == "seed" and kinds[names.index(what)] == "dup":
            swap[b] = what
        elif how == "zeros" and where == "arg" and what in accumulate and kinds[what] == "dup":
            swap[b] = ("acc", what)
        elif how in ("empty", "copy") and where == "arg" and scratch:
            swap[b] = (how, b)
            news.append(((how, b), what))
    if not swap and not any(w == "copy" for _n, (w, _x) in recipe.results):
        return {}, frozenset(), ()
    keep = [b for b in range(len(recipe.bufs)) if b not in swap]
    renum = {b: k for k, b in enumerate(keep)}

    def src(where, what):
        if where == "buf":
            return ("seed", swap[what]) if what in swap else ("buf", renum[what])
        return (where, what)
    recipe.bufs = tuple(recipe.bufs[b] for b in keep)
    recipe.flat = tuple(src(w, x) for w, x in recipe.flat)
    results, out = [], {}
    for name, (where, what) in recipe.results:
        if where == "copy":  # the cotangent is the gradient: the seed stays as it is
            where = "seed"
        elif where == "narrow":
            what = (renum[what[0]], what[1])
        else:
            where, what = src(where, what)
        if where == "seed" and not (isinstance(what, tuple) and what[0] in ("empty", "copy")):
            out[name] = what
        results.append((name, (where, what)))
    recipe.results = tuple(results)
    recipe.scratch = frozenset(key for key, _i in news)  # (arrays of their own)
    return out, frozenset(k for k in swap.values() if isinstance(k, str)), tuple(news)


__all__ = ["consume_seeds"]
