"""GPU lowering: diffgpu-lower-to-gpu, diffgpu-to-ptx, compile_ptx and the kernel ABI."""
import re
import subprocess
import sys
import textwrap

import pytest

from diffgpu.errors import CompileError
from diffgpu.lowering.gpu import ptx as gpu_ptx
from diffgpu.lowering.registry import PipelineError, build_pass_manager, expand, parse_pipeline
from diffgpu.lowering.common.targets import TargetError
from diffgpu.driver.compiler import compile_ptx, has_nvptx
from diffgpu.lowering.gpu.to_gpu import extract_objects, kernel_abi

SM90 = '#nvvm.target<O = 3, chip = "sm_90">'
HOST = '#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">'
INT = {"f32": "i32", "f64": "i64"}

needs_nvptx = pytest.mark.skipif(not has_nvptx(), reason="MLIR bindings without NVPTX")


def memref(ty: str, rank: int = 1) -> str:
    return f"memref<{'?x' * rank}{ty}, strided<[{', '.join('?' * rank)}], offset: ?>>"


def kernel(name: str, args: str, body: str, target: str = SM90) -> str:
    return (f"func.func @{name}({args}) attributes {{diffgpu.kernel, diffgpu.target = "
            f"{target}}} {{\n{textwrap.indent(textwrap.dedent(body).strip(), '  ')}\n"
            "  return\n}\n")


def unary_kernel(expr: str, ty: str, rty: str) -> str:
    """A kernel computing `expr` (of %x: ty, %n: int, %b: i1) into R[i]."""
    it = INT[ty]
    return kernel("k", f"%A: {memref(ty)}, %R: {memref(rty)}, %n: {it}, %b: i1, %i: index", f"""
        %x = memref.load %A[%i] : {memref(ty)}
        %y = {expr}
        memref.store %y, %R[%i] : {memref(rty)}
    """)


MATH_UNARY = ("exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh",
              "sqrt", "rsqrt", "absf", "erf", "floor", "ceil", "atan", "exp2", "log2",
              "log10", "cbrt", "round", "trunc", "asin", "acos", "atanh", "asinh", "acosh")


def math_cases():
    for ty in ("f32", "f64"):
        it = INT[ty]
        for op in MATH_UNARY:
            yield ty, f"math.{op} %x : {ty}", ty
        for op in ("powf", "atan2", "copysign"):
            yield ty, f"math.{op} %x, %x : {ty}", ty
        yield ty, f"math.fma %x, %x, %x : {ty}", ty
        yield ty, f"math.fpowi %x, %n : {ty}, {it}", ty
        yield ty, f"math.ipowi %n, %n : {it}", it
        for op in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf",
                   "maxnumf", "minnumf"):
            yield ty, f"arith.{op} %x, %x : {ty}", ty
        yield ty, f"arith.negf %x : {ty}", ty
        for op in ("addi", "subi", "muli", "divsi", "remsi", "floordivsi", "ceildivsi",
                   "maxsi", "minsi", "andi", "ori", "xori", "shli", "shrsi"):
            yield ty, f"arith.{op} %n, %n : {it}", it
        yield ty, f"arith.sitofp %n : {it} to {ty}", ty
        yield ty, f"arith.fptosi %x : {ty} to {it}", it
        yield ty, f"arith.select %b, %x, %x : {ty}", ty
        other = "f64" if ty == "f32" else "f32"
        cast = "extf" if ty == "f32" else "truncf"
        yield ty, f"arith.{cast} %x : {ty} to {other}", other
        yield ty, f"arith.index_cast %n : {it} to index\n%z = arith.index_cast %y : index to {it}", it


@needs_nvptx
@pytest.mark.parametrize("ty,expr,rty", list(math_cases()),
                         ids=[f"{c[0]}-{c[1].split()[0]}" for c in math_cases()])
def test_op_reaches_ptx(ty, expr, rty):
    # each op the frontend may emit compiles to self-contained PTX for f32 and f64
    if "\n%z" in expr:  # index round trip: store the converted-back value
        src = unary_kernel(expr, ty, rty).replace("memref.store %y", "memref.store %z")
    else:
        src = unary_kernel(expr, ty, rty)
    res = compile_ptx(src, "sm_90")
    assert res.entries == ["k"]
    assert ".target sm_90" in res.ptx
    assert ".extern" not in res.ptx
    assert re.search(r"\bst\.global\.", res.ptx)


@needs_nvptx
def test_abi_descriptors_match_ptx_params():
    # the descriptors of kernel_abi predict the PTX .param list exactly
    args = (f"%A: {memref('f32')}, %a: f32, %B: {memref('i64', 3)}, %d: f64, "
            f"%m: i32, %n: i64, %i: index, %C: {memref('f64', 2)}, %D: {memref('i32')}, %c: i1")
    src = kernel("abi", args, f"""
        %x = memref.load %A[%i] : {memref('f32')}
        %y = arith.addf %x, %a : f32
        memref.store %y, %A[%i] : {memref('f32')}
    """)
    res = compile_ptx(src, "sm_90")
    want = [("memref", 1, "float32"), ("scalar", "float32"), ("memref", 3, "int64"),
            ("scalar", "float64"), ("scalar", "int32"), ("scalar", "int64"),
            ("scalar", "int64"), ("memref", 2, "float64"), ("memref", 1, "int32"),
            ("scalar", "bool")]
    assert res.kernels == {"abi": want}
    entry = res.ptx[res.ptx.index(".entry abi("):]
    params = re.findall(r"\.param \.(\w+)(?: \.ptr \.align \d+)? abi_param_(\d+)",
                        entry[:entry.index(")")])
    assert [int(i) for _, i in params] == list(range(len(params)))
    assert [t for t, _ in params] == gpu_ptx.ptx_param_types(want)


def test_kernel_abi_skips_host_and_other_chips():
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context

    src = (kernel("g", f"%A: {memref('f32', 2)}", "") + kernel("h", "%x: f64", "", HOST)
           + kernel("old", "%x: f32", "", '#nvvm.target<O = 3, chip = "sm_80">'))
    with make_context():
        module = ir.Module.parse(src)
        assert kernel_abi(module, "sm_90") == {"g": [("memref", 2, "float32")]}
        assert set(kernel_abi(module)) == {"g", "old"}


@needs_nvptx
def test_mixed_host_and_gpu_module():
    # host kernels stay out of the PTX; GPU kernels and their callees go in
    src = ("func.func private @sq(%x: f32) -> f32 attributes {diffgpu.target = "
           f"{SM90}}} {{\n  %y = arith.mulf %x, %x : f32\n  return %y : f32\n}}\n"
           + kernel("gpu_k", f"%A: {memref('f32')}, %i: index", f"""
               %x = memref.load %A[%i] : {memref('f32')}
               %y = func.call @sq(%x) : (f32) -> f32
               memref.store %y, %A[%i] : {memref('f32')}
           """)
           + kernel("host_k", f"%A: {memref('f32')}", "", HOST))
    res = compile_ptx(src, "sm_90")
    assert res.entries == ["gpu_k"]
    assert list(res.kernels) == ["gpu_k"]
    assert "host_k" not in res.ptx


@needs_nvptx
def test_elementwise_ptx_is_lean():
    # y[i] = a * x[i] + y[i] under a bounds guard: one load per input, one
    # store, mul then add (not contracted to an fma: same rounding as the
    # CPU path), no loop, no local memory, no call
    t = memref("f32")
    src = kernel("saxpy", f"%a: f32, %x: {t}, %y: {t}", f"""
        %tid = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
        %bid = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
        %bdim = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
        %0 = arith.muli %bid, %bdim : index
        %i = arith.addi %0, %tid : index
        %c0 = arith.constant 0 : index
        %n = memref.dim %x, %c0 : {t}
        %in = arith.cmpi slt, %i, %n : index
        scf.if %in {{
          %xv = memref.load %x[%i] : {t}
          %yv = memref.load %y[%i] : {t}
          %ax = arith.mulf %a, %xv : f32
          %r = arith.addf %ax, %yv : f32
          memref.store %r, %y[%i] : {t}
        }}
    """)
    ptx = compile_ptx(src, "sm_90").ptx
    body = ptx[ptx.index(".entry saxpy"):]
    assert body.count("ld.global") == 2 and body.count("st.global") == 1
    assert "mul.rn.f32" in body and "add.rn.f32" in body and "fma" not in body
    assert ".local" not in body and "call" not in body
    assert len(re.findall(r"^\s+[a-z]", body, re.M)) < 40  # instructions


def test_compile_errors_are_clean():
    with pytest.raises(TargetError, match="unknown NVIDIA chip 'sm_1'"):
        compile_ptx(kernel("k", "", ""), "sm_1")
    with pytest.raises(CompileError, match="expected"):
        compile_ptx("func.func @k( {", "sm_90")
    src = kernel("k80", "", "", '#nvvm.target<O = 3, chip = "sm_80">')
    with pytest.raises(CompileError, match="kernel '@k80' targets sm_80 but the pipeline "
                                           "compiles for sm_90"):
        compile_ptx(src, "sm_90")
    with pytest.raises(CompileError, match="produced no gpu.module: it lowers GPU targets, "
                                           "but kernel @h targets the host"):
        compile_ptx(kernel("h", "", "", HOST), "sm_90")
    with pytest.raises(CompileError, match="no GPU kernel or function for sm_90"):
        compile_ptx("module {}", "sm_90")
    two = kernel("a", "", "") + kernel("b", "", "", '#nvvm.target<O = 2, chip = "sm_90">')
    with pytest.raises(CompileError, match="2 different targets"):
        compile_ptx(two, "sm_90")


@needs_nvptx
def test_externals():
    # heap memory (memref.alloc) uses CUDA's device malloc/free, which the
    # driver resolves; a call to a function without a body is refused
    heap = kernel("k", f"%A: {memref('f32')}, %n: index", f"""
        %m = memref.alloc(%n) : memref<?xf32>
        %c0 = arith.constant 0 : index
        %x = memref.load %A[%c0] : {memref('f32')}
        memref.store %x, %m[%n] : memref<?xf32>
        %y = memref.load %m[%c0] : memref<?xf32>
        memref.store %y, %A[%n] : {memref('f32')}
        memref.dealloc %m : memref<?xf32>
    """)
    ptx = compile_ptx(heap, "sm_90").ptx
    assert re.search(r"\.extern \.func .*malloc", ptx)
    ext = ("func.func private @ext(f32) -> f32 attributes {diffgpu.target = " + SM90 + "}\n"
           + kernel("k", "%x: f32", "%y = func.call @ext(%x) : (f32) -> f32"))
    with pytest.raises(CompileError, match="the PTX calls functions it does not define: ext"):
        compile_ptx(ext, "sm_90")


def test_pipeline_expansion_names_the_passes():
    names = [e.name for e in expand(parse_pipeline("diffgpu-to-ptx{chip=sm_90}"))]
    assert names[:3] == ["diffgpu-verify-targets", "diffgpu-autodiff",
                         "diffgpu-verify-targets"]
    at = names.index("diffgpu-lower-to-gpu")
    # after autodiff, before lowering: the launch-fact passes and the atomics rewrites
    assert set(names[3:at]) >= {"diffgpu-coarsen", "diffgpu-specialize",
                                "diffgpu-aggregate-atomics"}
    # the end check of what the pipeline promises (lowering/checks/lowered_check.py)
    assert names[-2:] == ["gpu-module-to-binary", "diffgpu-check-lowered"]
    lower = expand(parse_pipeline("diffgpu-to-ptx{chip=sm_90}"))[at]
    assert lower.options == "chip=sm_90"
    # without chip: nothing is checked or supplied
    assert expand(parse_pipeline("diffgpu-to-ptx"))[at].options is None


@pytest.mark.parametrize("text,msg", [
    ("diffgpu-to-ptx{chip=sm_9}", "unknown NVIDIA chip 'sm_9'"),
    ("diffgpu-lower-to-gpu{chip=gfx90a}", "unknown NVIDIA chip 'gfx90a'"),
    ("gpu-module-to-binary{format=ptx}", "unknown format 'ptx'"),
    ("gpu-module-to-binary{format=}", "unknown format ''"),
    ("nvvm-attach-target{chip=sm_91}", "unknown NVIDIA chip 'sm_91'"),
    ("nvvm-attach-target{O=5}", "O must be 0, 1, 2 or 3"),
    ("nvvm-attach-target{triple=x86_64-unknown-linux-gnu}", "triple must be one of"),
])
def test_bad_options_rejected_before_mlir(text, msg):
    with pytest.raises(PipelineError, match=re.escape(msg)):
        build_pass_manager(text)


@needs_nvptx
def test_every_accepted_binary_format_runs():
    # in a subprocess: a format MLIR does not know aborts the process
    code = textwrap.dedent(f"""
        from diffgpu._mlir import ir
        from diffgpu.dialects import make_context
        from diffgpu.lowering.gpu import ptx as gpu_ptx
        from diffgpu.lowering.registry import build_pass_manager
        src = {kernel("k", "%x: f32", "")!r}
        for fmt in gpu_ptx.BINARY_FORMATS:
            ctx = make_context()
            with ctx:
                m = ir.Module.parse(src)
                build_pass_manager(["diffgpu-lower-to-gpu"] + list(gpu_ptx.GPU_TO_NVVM)
                                   + ["gpu-module-to-binary{{format=" + fmt + "}}"], ctx).run(m.operation)
                (objs,) = gpu_ptx.extract_objects(m).values()
                print(fmt, objs[0].format, len(objs[0].data))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    got = dict(line.split()[:2] for line in out.stdout.splitlines())
    assert got["isa"] == got["assembly"] == "ptx"
    assert got["llvm"] == got["offloading"] == "llvm"
    assert set(got) == set(gpu_ptx.BINARY_FORMATS)


@needs_nvptx
def test_extract_objects_llvm_bitcode():
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context

    ctx = make_context()
    with ctx:
        m = ir.Module.parse(kernel("k", "%x: f32", ""))
        build_pass_manager(["diffgpu-lower-to-gpu", *gpu_ptx.GPU_TO_NVVM,
                            "gpu-module-to-binary{format=llvm}"], ctx).run(m.operation)
        objs = extract_objects(m)
    assert list(objs) == ["diffgpu_sm_90"]
    assert objs["diffgpu_sm_90"][0].format == "llvm"
    assert objs["diffgpu_sm_90"][0].data[:4] == b"BC\xc0\xde"
    assert gpu_ptx.extract_ptx(m) == {}


def test_locations_carried_over():
    # rewritten ops keep the location of the diffgpu op they replace
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context

    src = ('func.func @k() attributes {diffgpu.kernel, diffgpu.target = ' + SM90 + '} {\n'
           '  %t = "diffgpu.thread_id"() {dim = 1 : i64} : () -> index loc("k.py":3:7)\n'
           '  "diffgpu.barrier"() : () -> () loc("k.py":4:5)\n'
           '  return loc("k.py":5:1)\n} loc("k.py":1:1)\n')
    ctx = make_context()
    with ctx:
        m = ir.Module.parse(src)
        build_pass_manager("diffgpu-lower-to-gpu", ctx).run(m.operation)
        locs = {}

        def visit(op):
            locs[op.operation.name] = str(op.operation.location)
            return ir.WalkResult.ADVANCE

        m.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    assert locs["gpu.func"] == 'loc("k.py":1:1)'
    assert locs["gpu.thread_id"] == 'loc("k.py":3:7)'
    assert locs["gpu.barrier"] == 'loc("k.py":4:5)'
    assert locs["gpu.return"] == 'loc("k.py":5:1)'


def test_has_nvptx_is_true_here():
    # the pinned MLIR wheel ships the NVPTX backend and libdevice
    assert has_nvptx()


def _launch_args(descriptors, values):
    """Kernel parameters per the ABI (lowering/gpu/to_gpu.py), for CuPy arrays."""
    import numpy as np

    dtypes = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
              "int64": np.int64, "bool": np.uint8}
    out = []
    for d, v in zip(descriptors, values):
        if d[0] == "memref":
            ptr = np.uint64(v.data.ptr)  # a view's pointer: offset folded in
            out += [ptr, ptr, np.int64(0)] + [np.int64(s) for s in v.shape]
            out += [np.int64(s // v.itemsize) for s in v.strides]
        else:
            out.append(dtypes[d[1]](v))
    return tuple(out)


@pytest.mark.gpu
@needs_nvptx
def test_ptx_runs_on_gpu(tmp_path):
    # the ABI on real hardware: strided views (negative strides too), a 2-D
    # transposed view, a float atomic, shared memory with a barrier
    import cupy as cp
    import numpy as np

    t, t2 = memref("f32"), memref("f64", 2)
    src = kernel("saxpy", f"%a: f32, %x: {t}, %y: {t}", f"""
        %i = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
        %xv = memref.load %x[%i] : {t}
        %yv = memref.load %y[%i] : {t}
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        memref.store %r, %y[%i] : {t}
    """) + kernel("twice", f"%A: {t2}, %B: {t2}", f"""
        %tx = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
        %ty = "diffgpu.thread_id"() {{dim = 1 : i64}} : () -> index
        %v = memref.load %A[%ty, %tx] : {t2}
        %w = arith.addf %v, %v : f64
        memref.store %w, %B[%ty, %tx] : {t2}
    """) + kernel("rev", f"%A: {t}, %S: {t}", f"""
        %s = "diffgpu.shared_alloc"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
        %i = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
        %v = memref.load %A[%i] : {t}
        memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
        "diffgpu.barrier"() : () -> ()
        %c63 = arith.constant 63 : index
        %j = arith.subi %c63, %i : index
        %w = memref.load %s[%j] : memref<64xf32, #gpu.address_space<workgroup>>
        memref.store %w, %A[%i] : {t}
        %c0 = arith.constant 0 : index
        %o = "diffgpu.atomic_add"(%S, %v, %c0) : ({t}, f32, index) -> f32
    """)
    res = compile_ptx(src, "sm_90")
    path = tmp_path / "k.ptx"
    path.write_text(res.ptx)
    mod = cp.RawModule(path=str(path))

    def launch(name, block, *values):
        mod.get_function(name)((1,), block, _launch_args(res.kernels[name], values))

    xb, yb = cp.arange(128, dtype=np.float32), cp.ones(192, dtype=np.float32)
    x, y = xb[::2], yb[1::3]
    want = 2.0 * x.get() + y.get()
    launch("saxpy", (64,), 2.0, x, y)
    assert np.array_equal(y.get(), want) and float(yb[0]) == 1.0
    x, y = xb[::-2], yb[::-3]  # negative strides
    want = 2.0 * x.get() + y.get()
    launch("saxpy", (64,), 2.0, x, y)
    assert np.array_equal(y.get(), want)

    a = np.arange(12.0).reshape(3, 4)
    A = cp.asarray(a.T.copy()).T  # Fortran-ordered view
    B = cp.zeros((3, 4))
    launch("twice", (4, 3), A, B)
    assert np.array_equal(B.get(), 2 * a)

    A, S = cp.arange(64, dtype=np.float32), cp.zeros(1, dtype=np.float32)
    launch("rev", (64,), A, S)
    assert np.array_equal(A.get(), np.arange(64, dtype=np.float32)[::-1])
    assert float(S[0]) == float(np.arange(64).sum())


def _corpus():
    from kernels_corpus import CASES
    return CASES


@needs_nvptx
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _corpus(), ids=[c.name for c in _corpus()])
def test_corpus_compiles_to_ptx(case, dtype):
    # every frontend corpus kernel (kernels_corpus.py) reaches PTX with its
    # entry and ABI (launched on an H200, all matched their numpy references)
    import numpy as np

    args = case.make(np.dtype(dtype).type, np)
    res = compile_ptx(case.kernel.ir(*args, stage="dialect", target="sm_90"), "sm_90")
    assert case.kernel.name in res.entries
    want = [("memref", a.ndim, a.dtype.name) if isinstance(a, np.ndarray) else None
            for a in args]
    got = res.kernels[case.kernel.name]
    assert [g if w is not None else None for g, w in zip(got, want)] == want
