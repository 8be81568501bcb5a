"""A taped program as one op of PyTorch and of JAX: the code of docs/tape.md
("A taped program as one op of PyTorch or JAX"), run from the doc itself
(its first example, which defines the kernels and the tape's own gradients
gx0 and gk, the `simulate` block and the framework's block, each at its
line of the doc), then checked here: gradients against float64 central
differences of the program run without a tape, both inputs, a second call
on other values, the inputs left as they were, a retained graph's second
backward, float32, and bad input raising diffgpu's error."""
from __future__ import annotations

import os
import runpy
import sys

import numpy as np
import pytest

import diffgpu as dg

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOC = os.path.join(REPO, "docs", "tape.md")
sys.path.insert(0, os.path.join(REPO, "scripts"))
import doc_examples  # noqa: E402


def _doc_namespace(tmp_path, marker: str) -> dict:
    """Run the doc's first block, its `simulate` block and the block holding
    `marker`, as one module at the doc's line numbers; its globals."""
    with open(DOC) as f:
        found = doc_examples.blocks(f.read())
    first = found[0]
    chosen = [first] + [b for b in found if "def simulate(x, k, loss):" in b[1]] + [
        b for b in found if marker in b[1]]
    assert len(chosen) == 3, f"docs/tape.md: the blocks of {marker!r} are not where expected"
    src = [doc_examples.PRELUDE]
    for line, code, skip in chosen:
        assert skip is None, f"docs/tape.md line {line}: skipped here ({skip})"
        src += [""] * (line - 1 - len(src))
        src += code.splitlines()
    path = tmp_path / "doc_tape_wrap.py"  # kernels must live in a file
    path.write_text("\n".join(src) + "\n")
    return runpy.run_path(str(path))


def _plain(ns, x0, k) -> float:
    """The program without a tape, on copies: its loss."""
    x, kk = np.array(x0, np.float64), np.array(k, np.float64)
    loss = np.zeros(1)
    ns["simulate"](x, kk, loss)
    return float(loss[0])


def _fd(ns, x0, k, which, idx, eps=1e-6) -> list:
    """Central differences of the loss in x0 (which=0) or k (which=1)."""
    out = []
    for i in idx:
        e = np.zeros(64)
        e[i] = eps
        a, b = (x0 + e, k) if which == 0 else (x0, k + e)
        c, d = (x0 - e, k) if which == 0 else (x0, k - e)
        out.append((_plain(ns, a, b) - _plain(ns, c, d)) / (2 * eps))
    return out


IDX = [0, 17, 40, 63]


# -- PyTorch ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch_doc(tmp_path_factory):
    pytest.importorskip("torch")
    return _doc_namespace(tmp_path_factory.mktemp("torch"), "torch.autograd.Function")


def test_torch_op_gradients_match_finite_differences(torch_doc):
    import torch

    ns, Simulate = torch_doc, torch_doc["Simulate"]
    rng = np.random.default_rng(1)
    for _ in range(2):  # a second call, on other values: a tape of its own
        x0, k = rng.uniform(0.4, 1.1, 64), rng.uniform(1.0, 3.0, 64)
        xt = torch.tensor(x0, requires_grad=True)
        kt = torch.tensor(k, requires_grad=True)
        loss = Simulate.apply(xt, kt)
        assert loss.shape == (1,) and loss.dtype == torch.float64
        assert loss.item() == pytest.approx(_plain(ns, x0, k), rel=1e-14)
        (0.5 * loss).sum().backward()
        assert np.array_equal(xt.detach().numpy(), x0)  # the forward ran on copies
        assert np.array_equal(kt.detach().numpy(), k)
        np.testing.assert_allclose(xt.grad.numpy()[IDX], 0.5 * np.array(_fd(ns, x0, k, 0, IDX)),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(kt.grad.numpy()[IDX], 0.5 * np.array(_fd(ns, x0, k, 1, IDX)),
                                   rtol=1e-6, atol=1e-9)


def test_torch_op_backward_twice_and_only_what_is_asked(torch_doc):
    import torch

    Simulate = torch_doc["Simulate"]
    xt = torch.linspace(0.5, 1.0, 64, dtype=torch.float64, requires_grad=True)
    kt = torch.full((64,), 2.0, dtype=torch.float64)  # no gradient asked for k
    loss = Simulate.apply(xt, kt)
    g1, = torch.autograd.grad(loss.sum(), [xt], retain_graph=True)
    g2, = torch.autograd.grad(loss.sum(), [xt])
    assert torch.equal(g1, g2)  # gradient() again: fresh results, nothing accumulated
    np.testing.assert_allclose(g1.numpy(), torch_doc["gx0"], rtol=1e-12)
    assert kt.grad is None


def test_torch_op_in_float32(torch_doc):
    import torch

    Simulate = torch_doc["Simulate"]
    xt = torch.linspace(0.5, 1.0, 64, dtype=torch.float32, requires_grad=True)
    kt = torch.full((64,), 2.0, dtype=torch.float32, requires_grad=True)
    Simulate.apply(xt, kt).sum().backward()
    assert xt.grad.dtype == torch.float32 and kt.grad.dtype == torch.float32
    np.testing.assert_allclose(xt.grad.numpy(), torch_doc["gx0"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(kt.grad.numpy(), torch_doc["gk"], rtol=1e-3, atol=1e-4)


def test_torch_op_bad_input_is_diffgpu_s_error(torch_doc):
    import torch

    Simulate = torch_doc["Simulate"]
    xt = torch.zeros(64, dtype=torch.complex128, requires_grad=True)
    with pytest.raises(dg.LaunchError, match=r"argument 0 \('x'\): unsupported dtype complex128"):
        Simulate.apply(xt, torch.full((64,), 2.0, dtype=torch.float64))


# -- JAX -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jax_doc(tmp_path_factory):
    jax = pytest.importorskip("jax")
    x64 = jax.config.jax_enable_x64
    try:
        yield _doc_namespace(tmp_path_factory.mktemp("jax"), "jax.custom_vjp")
    finally:
        jax.config.update("jax_enable_x64", x64)  # the doc turns it on


def test_jax_op_gradients_match_finite_differences_under_jit(jax_doc):
    import jax
    import jax.numpy as jnp

    ns, f = jax_doc, jax_doc["simulate_jax"]
    grad = jax.jit(jax.grad(lambda x0, k: 0.5 * f(x0, k)[0], argnums=(0, 1)))
    rng = np.random.default_rng(2)
    for _ in range(2):  # a second call of the compiled function, on other values
        x0, k = rng.uniform(0.4, 1.1, 64), rng.uniform(1.0, 3.0, 64)
        loss = jax.jit(f)(jnp.asarray(x0), jnp.asarray(k))
        assert loss.shape == (1,) and loss.dtype == jnp.float64
        assert float(loss[0]) == pytest.approx(_plain(ns, x0, k), rel=1e-14)
        gx, gk = grad(jnp.asarray(x0), jnp.asarray(k))
        assert gx.dtype == jnp.float64 and gx.shape == (64,)
        np.testing.assert_allclose(np.asarray(gx)[IDX], 0.5 * np.array(_fd(ns, x0, k, 0, IDX)),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.asarray(gk)[IDX], 0.5 * np.array(_fd(ns, x0, k, 1, IDX)),
                                   rtol=1e-6, atol=1e-9)


def test_jax_op_vjp_takes_the_cotangent(jax_doc):
    import jax
    import jax.numpy as jnp

    f = jax_doc["simulate_jax"]
    xj, kj = jnp.linspace(0.5, 1.0, 64), jnp.full(64, 2.0)
    loss, pullback = jax.vjp(f, xj, kj)
    gx, gk = pullback(jnp.array([-2.5]))
    np.testing.assert_allclose(np.asarray(gx), -2.5 * jax_doc["gx0"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gk), -2.5 * jax_doc["gk"], rtol=1e-12)


def test_jax_op_bad_input_carries_diffgpu_s_error(jax_doc):
    """diffgpu's error in the callback reaches the caller as JAX's runtime
    error of a callback, with diffgpu's message."""
    import jax
    import jax.numpy as jnp

    f = jax_doc["simulate_jax"]
    with pytest.raises(jax.errors.JaxRuntimeError,
                       match=r"LaunchError: argument 0 \('x'\): unsupported dtype complex128"):
        f(jnp.zeros(64, jnp.complex128), jnp.full(64, 2.0))
