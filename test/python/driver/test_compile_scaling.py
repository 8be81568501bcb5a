"""Compile work stays linear in kernel size: a flat sum of 1,000 terms and its
gradient compile on the host, and the generated code grows in proportion.

The checks count work (lines of LLVM-dialect text, barrier phases), never
seconds, so a loaded machine cannot make them flaky. bench/compile_scaling.py
prints the timings.
"""
import importlib.util

import numpy as np
import pytest

import diffgpu as dg
from diffgpu._mlir import ir
from diffgpu.runtime import cpu
from diffgpu.lowering.reduce.aggregate_atomics import MAX_BLOCK_SUMS

WIDTH = 16  # term i reads X[i % WIDTH]


def sum_kernels(tmp_path, coefs, name="k"):
    """`name`: Y[0] = X[0] * c0 + X[1] * c1 + ... (one flat sum), and its
    reverse-mode kernel."""
    terms = " + ".join(f"X[{i % WIDTH}] * {c!r}" for i, c in enumerate(coefs))
    src = f"def {name}(Y, X):\n    Y[0] = {terms}\n"
    path = tmp_path / f"{name}_{len(coefs)}.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    k = dg.kernel(ns[name])

    @dg.kernel
    def grad(Y, dY, X, dX):
        dg.autodiff(k, dg.Duplicated(Y, dY), dg.Duplicated(X, dX))

    return k, grad


def arrays():
    x = np.random.default_rng(1).standard_normal(WIDTH)
    return np.zeros(1), np.array([0.75]), x, np.zeros(WIDTH)


def expected_dx(coefs, dy):
    dx = np.zeros(WIDTH)
    for i, c in enumerate(coefs):
        dx[i % WIDTH] += c
    return dx * dy


def test_500_term_sum_and_gradient_compile_in_linear_work(tmp_path):
    """Before MAX_BLOCK_SUMS, each of the gradient's adds to dX became a block
    sum with its own barrier and shared array; the host lowering made one phase
    function per barrier taking every shared array: 107,000 lines of LLVM for
    100 terms, and minutes of compile time for 300. 50 and 500 terms: ten
    times the terms must give about ten times the code (quadratic growth would
    give a hundred times), with the same number of phases."""
    lines, phases = {}, {}
    for n in (50, 500):
        coefs = [float(i + 1) for i in range(n)]
        k, grad = sum_kernels(tmp_path, coefs)
        y, dy, x, dx = arrays()
        k[1, 1](y, x)
        assert np.isclose(y[0], sum(c * x[i % WIDTH] for i, c in enumerate(coefs)),
                          rtol=1e-12)
        grad[1, 1](y, dy, x, dx)
        np.testing.assert_allclose(dx, expected_dx(coefs, 0.75), rtol=1e-12)
        text = llvm_text(grad)
        lines[n] = text.count("\n")
        phases[n] = text.count("llvm.func @grad__phase")
    assert lines[500] < 12 * lines[50], lines  # 10x the terms: about 10x the code
    assert phases[50] == phases[500] <= MAX_BLOCK_SUMS + 1, phases


def llvm_text(kernel) -> str:
    """The LLVM-dialect text of the one host program `kernel` has launched."""
    (program,) = kernel._programs.values()
    return program.host.llvm_text


def test_large_module_jits_at_o0_with_the_same_bits(tmp_path, monkeypatch):
    """Above LARGE_MODULE_LINES the JIT skips LLVM's super-linear O2 pipeline;
    the results are bit-identical to O2's (rounding-sensitive coefficients)."""
    coefs = [float(c) for c in np.random.default_rng(2).standard_normal(120) * 1e3]
    results = []
    monkeypatch.setenv("DIFFGPU_OPT", "2")  # the users' level (conftest.py sets 0)
    for limit in (10**9, 0):  # O2, then O0
        monkeypatch.setattr(cpu, "LARGE_MODULE_LINES", limit)
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / f"cache{limit}"))
        k, grad = sum_kernels(tmp_path, coefs, name=f"k{limit}")
        y, dy, x, dx = arrays()
        k[1, 64](y, x)
        grad[1, 1](y, dy, x, dx)
        assert cpu.opt_level_for(llvm_text(grad), 2) == (2 if limit else 0)
        results.append((y.copy(), dx.copy()))
    (y2, dx2), (y0, dx0) = results
    assert y2.tobytes() == y0.tobytes() and dx2.tobytes() == dx0.tobytes()
    np.testing.assert_allclose(dx0, expected_dx(coefs, 0.75), rtol=1e-9)


# --- reverse mode: work linear in the kernel ------------------------------------
@pytest.fixture
def ops_read(monkeypatch):
    """[n]: the ops the compiler reads through the bindings' op lists (each
    op iterated, each op a `len` or an index passes over), so that a pass
    walking a whole block per op shows up as n * n."""
    from diffgpu._mlir import ir

    seen = [0]
    cls = ir.OperationList
    real_iter, real_len, real_get = cls.__iter__, cls.__len__, cls.__getitem__

    def iterate(self):
        for op in real_iter(self):
            seen[0] += 1
            yield op

    def length(self):
        n = real_len(self)
        seen[0] += n
        return n

    def item(self, i):
        seen[0] += i + 1 if i >= 0 else 2 * real_len(self) + i + 1
        return real_get(self, i)

    monkeypatch.setattr(cls, "__iter__", iterate)
    monkeypatch.setattr(cls, "__len__", length)
    monkeypatch.setattr(cls, "__getitem__", item)
    return seen


def chain_kernel(tmp_path, n, shape):
    """t_j = t_{j-1} * X[j % 16] + sin(t_{j-2}) * c_j, j < n, then Y[i] =
    t_{n-1}: under the thread's guard ("guard": a block that runs once, its
    forward values go through slots) or in a loop ("loop": through the tape)."""
    body = ["t0 = X[0]", "t1 = X[1]"] + [
        f"t{j} = t{j - 1} * X[{j % WIDTH}] + dg.sin(t{j - 2}) * {COEF[j % 4]!r}"
        for j in range(2, n)] + [f"Y[i] = Y[i] + t{n - 1}"]
    head = ("    if i < len(Y):\n" if shape == "guard" else
            "    for r in range(reps):\n")
    src = ("import diffgpu as dg\n\n\n@dg.kernel\ndef chain(Y, X, reps):\n"
           "    i = dg.global_id(0)\n" + head + "".join(f"        {s}\n" for s in body))
    path = tmp_path / f"chain_{shape}_{n}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.chain


COEF = (0.5, 1.25, -0.75, 1.5)


def chain_grad(x, n, reps):
    """d(sum of Y) / dX for chain_kernel, by hand (reverse order)."""
    t = [x[0], x[1]]
    for j in range(2, n):
        t.append(t[j - 1] * x[j % WIDTH] + np.sin(t[j - 2]) * COEF[j % 4])
    adj, dx = [0.0] * n, np.zeros(WIDTH)
    adj[n - 1] = float(reps)
    for j in range(n - 1, 1, -1):
        adj[j - 1] += adj[j] * x[j % WIDTH]
        dx[j % WIDTH] += adj[j] * t[j - 1]
        adj[j - 2] += adj[j] * COEF[j % 4] * np.cos(t[j - 2])
    dx[0] += adj[0]
    dx[1] += adj[1]
    return dx


@pytest.mark.parametrize("shape", ["guard", "loop"])
def test_reverse_mode_compiles_in_work_linear_in_the_kernel(tmp_path, ops_read, shape):
    """`dg.vjp` of a chain of 40 and of 400 statements: ten times the
    statements read about ten times the ops. Each forward value the reverse
    sweep needed used to list its whole block to find the terminator
    (reverse.py `need`), and each tape slot the entry block (tape.py
    `at_begin`): 1,000 statements took 12 s, 5,000 took 591 s."""
    reps = 1 if shape == "guard" else 3
    counts = {}
    for n in (40, 400):
        kernel = chain_kernel(tmp_path, n, shape)
        x = np.random.default_rng(n).standard_normal(WIDTH) * 0.3
        ops_read[0] = 0
        grads = dg.vjp(kernel[1, 1], np.zeros(1), x, reps, cotangents={"Y": np.ones(1)})
        counts[n] = ops_read[0]
        np.testing.assert_allclose(grads["X"], chain_grad(x, n, reps), rtol=1e-10, atol=1e-12)
    assert counts[40] > 0
    assert counts[400] < 13 * counts[40], counts  # linear: about 10x, quadratic: 100x


def test_reverse_mode_with_its_atomic_adds_compiles_in_linear_work(tmp_path, ops_read,
                                                                  monkeypatch):
    """The guarded chain with DIFFGPU_COMBINE_ADDS=0: its ~n adds into dX
    reach diffgpu-block-sums and diffgpu-aggregate-atomics as they are. Their
    checks (reduce/hoist.py) listed the whole block for each add to find the
    ops after it, and each hoisted add copied the guard's ops one by one into
    a new scf.if: 400 statements read 14.4 times the ops of 40. The ops
    the checks walk after an add count too (hoist.later_ops)."""
    from diffgpu.lowering.reduce import hoist

    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")
    later = hoist.later_ops

    def counted(op):
        for o in later(op):
            ops_read[0] += 1
            yield o

    monkeypatch.setattr(hoist, "later_ops", counted)
    counts = {}
    for n in (40, 400):
        kernel = chain_kernel(tmp_path, n, "guard")
        x = np.random.default_rng(n).standard_normal(WIDTH) * 0.3
        ops_read[0] = 0
        grads = dg.vjp(kernel[1, 1], np.zeros(1), x, 1, cotangents={"Y": np.ones(1)})
        counts[n] = ops_read[0]
        np.testing.assert_allclose(grads["X"], chain_grad(x, n, 1), rtol=1e-10, atol=1e-12)
    assert counts[40] > 0
    assert counts[400] < 13 * counts[40], counts


def test_large_module_has_no_value_across_blocks(tmp_path, monkeypatch):
    """A module JIT-compiled at O0 for its size gets runtime/jit.py's
    `prepare_large`: every value used in another block than its own goes
    through a stack slot, every function is optnone. The ExecutionEngine generates code
    at LLVM's default level whatever the opt level, and its register
    allocator's work grows as (values live across blocks) * (blocks): 28 s
    for a 2,000-statement gradient, 6 s with the rewrites. Same bits as O2."""
    monkeypatch.setenv("DIFFGPU_OPT", "2")
    x = np.random.default_rng(5).standard_normal(WIDTH) * 0.3
    grads = []
    for limit in (10**9, 0):  # O2, then O0 with the rewrites
        monkeypatch.setattr(cpu, "LARGE_MODULE_LINES", limit)
        monkeypatch.setenv("DIFFGPU_CACHE_DIR", str(tmp_path / f"cache{limit}"))
        kernel = chain_kernel(tmp_path, 30, "guard")
        grads.append(dg.vjp(kernel[1, 1], np.zeros(1), x, 1, cotangents={"Y": np.ones(1)})["X"])
    assert grads[0].tobytes() == grads[1].tobytes()
    np.testing.assert_allclose(grads[1], chain_grad(x, 30, 1), rtol=1e-10, atol=1e-12)
    (program,) = kernel._programs.values()
    assert program.host.level == 0
    funcs = [op.operation for op in program.host._keep[0].module.body.operations
             if op.operation.name == "llvm.func" and len(op.operation.regions[0].blocks)]
    blocks = across = 0
    for fn in funcs:
        assert {"optnone", "noinline"} <= {str(a).strip('"') for a in fn.attributes["passthrough"]}
        for block in fn.regions[0].blocks:
            blocks += 1
            for op in block.operations:
                for v in op.operation.operands:
                    if isinstance(v.owner, ir.Block):
                        across += v.owner != block
                    elif not frame_or_constant(v.owner.operation):
                        across += v.owner.operation.block != block
    assert blocks > 100 and across == 0, (blocks, across)


def frame_or_constant(op) -> bool:
    """An LLVM constant or a static alloca: its value lives in no register."""
    return op.name.startswith("llvm.mlir.") or (
        op.name == "llvm.alloca" and op.block == op.parent.regions[0].blocks[0])


def test_sincos_fusion_reads_each_op_a_bounded_number_of_times(ops_read):
    """diffgpu-fuse-sincos on a block of 50 and of 500 sin/cos pairs (a
    reverse sweep's: sin forward, cos in the derivative): it scanned the
    block for each sin's cos and listed it again after each fusion."""
    from diffgpu.driver import compiler
    from diffgpu.lowering.gpu.sincos import fuse_block

    counts = {}
    for n in (50, 500):
        body = "".join(f"  %s{i} = math.sin %x{i} : f32\n" for i in range(n)) + "".join(
            f"  %c{i} = math.cos %x{i} : f32\n  %p{i} = arith.mulf %s{i}, %c{i} : f32\n"
            for i in range(n))
        args = ", ".join(f"%x{i}: f32" for i in range(n))
        with compiler.new_context():
            module = ir.Module.parse(f"func.func @f({args}) {{\n{body}  return\n}}")
            block = module.body.operations[0].regions[0].blocks[0]
            ops_read[0] = 0
            assert fuse_block(block) == n
            counts[n] = ops_read[0]
            names = [op.operation.name for op in block.operations]
            assert names.count("math.sincos") == n and "math.sin" not in names
    assert counts[500] < 13 * counts[50], counts
