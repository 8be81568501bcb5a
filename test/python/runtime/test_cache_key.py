"""Cache keys cover every compile-time value and callee the frontend reaches:
two processes sharing one cache directory, with different values (or an
edited helper module), each run their own values; the same values hit."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from diffgpu.runtime.store import cache
from diffgpu.types import ArrayType

F64 = (ArrayType("float64", 1),)

# a package of constants, read through attribute chains
CFGPKG = {
    "cfgpkg/__init__.py": "",
    "cfgpkg/params.py": """
        import os
        SCALE = float(os.environ["SCALE"])
        PAIR = (1.0, SCALE)
        """,
}
# a package of device functions; ops.helper's body is rewritten between runs
FPKG = {
    "fpkg/__init__.py": "",
    "fpkg/consts.py": """
        import os
        K = float(os.environ["SCALE"]) + 10.0
        """,
    "fpkg/deep.py": """
        import diffgpu as dg
        import fpkg.consts

        @dg.func
        def inner(x):
            return x * fpkg.consts.K
        """,
    "fpkg/ops.py": """
        import diffgpu as dg
        import fpkg.deep

        @dg.func
        def helper(x):
            return x * {factor}

        @dg.func
        def outer(x):
            return fpkg.deep.inner(x) + 1.0
        """,
}
MAIN = """
    import json, os, sys
    import numpy as np
    import diffgpu as dg
    import cfgpkg.params
    import fpkg.ops
    from diffgpu.driver.launch import STATS

    S = float(os.environ["SCALE"])

    class Cfg:
        scale = S
        class Inner:
            scale = S * 2.0

    MODS = (cfgpkg.params,)

    @dg.kernel
    def k_mod(X):
        X[0] = X[0] * cfgpkg.params.SCALE

    @dg.kernel
    def k_cls(X):
        X[0] = X[0] * Cfg.scale

    @dg.kernel
    def k_nested_cls(X):
        X[0] = X[0] * Cfg.Inner.scale

    @dg.kernel
    def k_tuple(X):
        X[0] = X[0] * cfgpkg.params.PAIR[1]

    @dg.kernel
    def k_tuple_of_modules(X):
        X[0] = X[0] * MODS[0].SCALE

    def make(s):
        @dg.kernel
        def k_closure(X):
            X[0] = X[0] * s
        return k_closure

    k_closure = make(S * 3.0)

    @dg.kernel
    def k_helper(X):
        X[0] = fpkg.ops.helper(X[0])

    @dg.kernel
    def k_transitive(X):
        X[0] = fpkg.ops.outer(X[0])

    out = {}
    for k in (k_mod, k_cls, k_nested_cls, k_tuple, k_tuple_of_modules, k_closure,
              k_helper, k_transitive):
        before = STATS["compile"]
        X = np.array([1.0])
        k[1, 1](X)
        out[k.name] = [float(X[0]), STATS["compile"] - before]
    print(json.dumps(out))
    """


def write_tree(root, files, **fmt):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).format(**fmt) if fmt else textwrap.dedent(text))


def run_main(tmp_path, cache_dir, scale, factor):
    write_tree(tmp_path, FPKG, factor=factor)
    env = dict(os.environ, DIFFGPU_CACHE_DIR=str(cache_dir), SCALE=str(scale),
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    out = subprocess.run([sys.executable, str(tmp_path / "main.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def expected(scale, factor):
    return {"k_mod": scale, "k_cls": scale, "k_nested_cls": 2 * scale, "k_tuple": scale,
            "k_tuple_of_modules": scale, "k_closure": 3 * scale, "k_helper": factor,
            "k_transitive": scale + 10.0 + 1.0}


def test_two_processes_see_their_own_values(tmp_path):
    # pkg.mod.X, Cls.attr, Cls.Inner.attr, a tuple element, a tuple of
    # modules, a closure, fpkg.ops.helper(x) and a helper's helper's constant:
    # each change between two runs on one cache directory is picked up, and
    # unchanged kernels are disk hits (no compile)
    cache_dir = tmp_path / "cache"
    write_tree(tmp_path, CFGPKG)
    (tmp_path / "main.py").write_text(textwrap.dedent(MAIN))
    names = list(expected(0, 0))

    first = run_main(tmp_path, cache_dir, 2.0, 5.0)
    assert {k: v[0] for k, v in first.items()} == expected(2.0, 5.0)
    assert all(first[k][1] == 1 for k in names), first  # all compiled

    second = run_main(tmp_path, cache_dir, 3.0, 5.0)  # every constant changes
    assert {k: v[0] for k, v in second.items()} == expected(3.0, 5.0)
    assert second["k_helper"][1] == 0, second  # helper unchanged: a disk hit
    assert all(second[k][1] == 1 for k in names if k != "k_helper"), second

    third = run_main(tmp_path, cache_dir, 3.0, 7.0)  # only helper's source changes
    assert {k: v[0] for k, v in third.items()} == expected(3.0, 7.0)
    assert third["k_helper"][1] == 1, third
    assert all(third[k][1] == 0 for k in names if k != "k_helper"), third

    again = run_main(tmp_path, cache_dir, 2.0, 5.0)  # back to the first values: all hits
    assert {k: v[0] for k, v in again.items()} == expected(2.0, 5.0)
    assert all(again[k][1] == 0 for k in names), again


def load_module(tmp_path, name, text):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("change", [
    "A = np.float32(1.5)", "A = np.float64(1.25)", "DT = np.float64", "A = -0.0",
    "A = 1", "A = True", "A = np.array(0.5)", "SHAPE = (4, 9)", "K = other",
])
def test_key_covers_each_kind_of_value(tmp_path, change):
    # numpy scalars (type and value) and 0-d arrays, dtypes, -0.0 vs 0.0,
    # int vs float vs bool, tuple shapes, and which function a name is bound to
    base = """
        import numpy as np
        import diffgpu as dg
        A = 0.0
        DT = np.float32
        SHAPE = (4, 8)

        @dg.func
        def one(x):
            return x

        @dg.func
        def other(x):
            return x + 1.0

        K = one

        @dg.kernel
        def k(X):
            s = dg.shared_array(SHAPE, DT)
            X[0] = K(X[0]) + A
        """
    before = cache.cache_key(load_module(tmp_path, "kb", base).k, F64, "host")
    changed = base.replace("\n        @dg.kernel", f"\n        {change}\n\n        @dg.kernel")
    after = cache.cache_key(load_module(tmp_path, "kc", changed).k, F64, "host")
    assert before != after
    # and the same source loaded again gives the same key (stable descriptions)
    assert cache.cache_key(load_module(tmp_path, "kd", base).k, F64, "host") == before


def test_key_ignores_values_a_kernel_cannot_reach(tmp_path):
    # a global the kernel does not mention, and an array global (never a
    # compile-time value), leave the key alone
    text = """
        import numpy as np
        import diffgpu as dg
        UNUSED = {u}
        BUF = np.zeros({n})

        @dg.kernel
        def k(X):
            X[0] = X[0] * 2.0
        """
    a = cache.cache_key(load_module(tmp_path, "ua", text.format(u=1, n=3)).k, F64, "host")
    b = cache.cache_key(load_module(tmp_path, "ub", text.format(u=2, n=5)).k, F64, "host")
    assert a == b


def test_key_of_an_endless_attribute_graph_never_matches(tmp_path):
    # an object that makes a new attribute object per lookup (a mock) cannot
    # be described completely: its key is unique, so it is never served stale
    mod = load_module(tmp_path, "km", """
        import diffgpu as dg
        from unittest import mock
        CFG = mock.MagicMock()

        @dg.kernel
        def k(X):
            X[0] = CFG.a.b
        """)
    assert cache.cache_key(mod.k, F64, "host") != cache.cache_key(mod.k, F64, "host")
