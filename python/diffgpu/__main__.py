"""`python -m diffgpu cache info|clear|prune`: look after the disk cache.

    $ python -m diffgpu cache info
    directory  /home/me/.cache/diffgpu
    entries    412
    size       6.3 MiB of 1024 MiB (DIFFGPU_CACHE_MAX_MB)
    status     in use

`clear` removes every entry; `prune` removes the least recently used ones
until the cache fits in 80% of its cap (`--to-mb N`: until it fits in N MiB,
a finite N >= 0). A directory that fails the ownership checks (see
runtime/store/cache_dir.py) is reported and left alone (exit status 1); a bad
argument, or a lock or trash that is refused (cache_prune.py), is a one-line
error (exit status 2, as argparse's). Imports no MLIR.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings


PROG = "python -m diffgpu cache"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def _size_mb(text: str) -> float:
    """--to-mb: a finite number of MiB, 0 or more (argparse reports others)."""
    try:
        mb = float(text)
    except ValueError:
        mb = None
    if mb is None or not 0 <= mb < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of MiB >= 0")
    return mb


def cache_main(argv) -> int:
    from diffgpu.runtime.store import cache_prune
    from diffgpu.runtime.store.cache_dir import FORMAT_DIR, cache_dir, check_root

    ap = argparse.ArgumentParser(prog=PROG,
                                 description="Show, clear or prune diffgpu's disk cache.")
    ap.add_argument("action", choices=("info", "clear", "prune"))
    ap.add_argument("--to-mb", type=_size_mb, default=None,
                    help="prune: remove least recently used entries until the cache "
                         "fits in this many MiB (default: 80%% of the cap, if over it)")
    opts = ap.parse_args(argv)
    root = cache_dir()
    sub = os.path.join(root, FORMAT_DIR)
    problem = check_root(root, sub)
    if opts.action == "info":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a bad DIFFGPU_CACHE_MAX_MB: shown as the default
            i = {"entries": 0, "bytes": 0, "max_bytes": cache_prune.max_bytes()}
            try:
                i = cache_prune.info(sub) if problem is None else i
            except OSError as exc:  # cache_dir.UnsafeCache: refused when opened
                problem = str(exc)
        print(f"directory  {root}")
        print(f"entries    {i['entries']}")
        print(f"size       {_mib(i['bytes'])} of {_mib(i['max_bytes'])} (DIFFGPU_CACHE_MAX_MB)")
        print(f"status     {'in use' if problem is None else 'not used: ' + problem}")
        return 0 if problem is None else 1
    if problem is not None:
        print(f"diffgpu: not touching the cache {root}: {problem}", file=sys.stderr)
        return 1
    if not os.path.isdir(sub):
        print(f"{root}: no cache entries")
        return 0
    try:
        if opts.action == "clear":
            before = cache_prune.clear(sub)
            print(f"removed {before['entries']} entries ({_mib(before['bytes'])}) from {root}")
            return 0
        target = None if opts.to_mb is None else int(opts.to_mb * (1 << 20))
        res = cache_prune.prune(sub, target)
    except OSError as exc:  # the lock or the trash refused (cache_dir.UnsafeCache), or unusable
        print(f"{PROG}: error: cannot {opts.action} {root}: {exc}", file=sys.stderr)
        return 2
    b, a = res["before"], res["after"]
    print(f"pruned {b['entries'] - a['entries']} entries from {root}: "
          f"{b['entries']} entries, {_mib(b['bytes'])} -> {a['entries']} entries, "
          f"{_mib(a['bytes'])}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "cache":
        print("usage: python -m diffgpu cache {info,clear,prune} [--to-mb N]",
              file=sys.stderr)
        return 2
    return cache_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
