"""Long chains of nested @dg.func calls: each callee is lowered before its
caller goes on, but never more than MAX_NESTED lowerings deep on the Python
stack, so a chain's length is not an expression's nesting depth."""
import importlib.util

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.frontend import lowerer, module


def chain_module(tmp_path, n, base="x + 1.0", name="chain"):
    """f0(x) = base; f_k(x) = f_{k-1}(x) + 1.0; kernel k: A[0] = f_{n-1}(A[0])."""
    lines = ["import diffgpu as dg", "", "", "@dg.func", "def f0(x):", f"    return {base}"]
    for k in range(1, n):
        lines += ["", "", "@dg.func", f"def f{k}(x):", f"    return f{k - 1}(x) + 1.0"]
    lines += ["", "", "@dg.kernel", "def k(A):", f"    A[0] = f{n - 1}(A[0])", ""]
    path = tmp_path / f"{name}.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def lowerings(monkeypatch):
    """Counts FunctionLowerer.lower calls (abandoned attempts included)."""
    calls = []
    real = lowerer.FunctionLowerer.lower

    def counted(self):
        calls.append(self.py_func.__name__)
        return real(self)
    monkeypatch.setattr(lowerer.FunctionLowerer, "lower", counted)
    return calls


def test_chain_of_200_funcs_compiles_and_runs(tmp_path, lowerings):
    mod = chain_module(tmp_path, 200)
    A = np.array([0.5])
    mod.k[1, 1](A)
    assert A[0] == 0.5 + 200.0
    # 201 functions, each abandoned at most once: linear work, not quadratic
    assert 201 <= len(lowerings) <= 2 * 201
    assert mod.k.ir(A, stage="dialect").count("func.func @f") == 200


def test_chain_gradients(tmp_path):
    mod = chain_module(tmp_path, 200, base="x * x", name="chain_sq")
    A, dA = np.array([3.0]), np.ones(1)
    dg.autodiff(mod.k[1, 1], dg.Duplicated(A, dA))
    assert dA[0] == 6.0
    A, dA = np.array([3.0]), np.ones(1)
    dg.fwddiff(mod.k[1, 1], dg.Duplicated(A, dA))
    assert A[0] == 9.0 + 199.0 and dA[0] == 6.0


def test_short_chains_are_lowered_once_each(tmp_path, lowerings):
    # the kernel and MAX_NESTED - 1 funcs: MAX_NESTED lowerings deep, none abandoned
    n = module.MAX_NESTED - 1
    mod = chain_module(tmp_path, n, name="short")
    A = np.zeros(1)
    mod.k[1, 1](A)
    assert A[0] == n
    assert lowerings == ["k"] + [f"f{j}" for j in reversed(range(n))]


def test_pathological_expression_at_the_end_of_a_chain(tmp_path):
    mod = chain_module(tmp_path, 200, base="-" * 1000 + "x", name="patho")
    with pytest.raises(dg.CompileError, match="expression too deeply nested") as e:
        mod.k[1, 1](np.zeros(1))
    assert "patho.py:6:" in str(e.value)  # f0's return line


def test_recursion_through_a_long_chain_is_reported(tmp_path):
    # f0 calls the last function: a cycle of 40 functions, longer than
    # MAX_NESTED; found at a function of the cycle, whichever is met again first
    mod = chain_module(tmp_path, 40, base="f39(x)", name="cycle")
    with pytest.raises(dg.CompileError, match=r"recursion is not supported: 'f\d+' calls "
                       "itself through other functions"):
        mod.k[1, 1](np.zeros(1))


def test_abandoned_lowerings_do_not_count_shared_memory(tmp_path):
    # 20 kernels, each calling the previous one inline, each with 2 KiB of
    # shared memory: 40 KiB in all, under the 48 KiB limit only if the
    # lowerings abandoned at MAX_NESTED do not count their arrays again
    lines = ["import numpy as np", "import diffgpu as dg"]
    for k in range(20):
        call = f"    k{k - 1}(A)" if k else "    pass"
        lines += ["", "", "@dg.kernel", f"def k{k}(A):",
                  "    s = dg.shared_array(256, np.float64)", "    s[0] = A[0]", call]
    path = tmp_path / "shared_chain.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("shared_chain", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.k19.ir(np.zeros(1), stage="dialect").count("shared_alloc") == 20
