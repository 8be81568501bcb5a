#!/usr/bin/env python3
"""dg.jax on a CUDA jaxlib: which kernel-call registration works, in one run.

    python scripts/jax_gpu_check.py --prepare .gpucache   # here: compile the programs (sm_90)
    python scripts/jax_gpu_check.py --run .gpucache       # on the GPU machine (no MLIR)

--run prints jax / jaxlib / plugin versions, what jaxlib's kernel-call
library offers (`registrations()`, `get_custom_call`) and which of the two
targets XLA lists for CUDA, then probes each way of calling it, each in its
own process (a failing launch must not take the others down):

| probe           | emits                                        | registration            |
|-----------------|----------------------------------------------|-------------------------|
| ffi             | typed FFI call of triton_kernel_call_ffi     | jaxlib's, at import     |
| legacy          | status-returning call of triton_kernel_call  | jaxlib's, at import     |
| ffi+register    | as ffi                                       | again, jax.ffi.register_ffi_target |
| legacy+register | as legacy                                    | again, xla_client, api_version 0 |

Each probe runs the computations of test_jax.py's GPU tests (jitted forward
and jitted gradient of square_scale, mul_add, dense_tanh in float64 against
jax.numpy, then the f32 2^20 square_scale timed against jnp). The `+register`
probes run only if their plain probe failed. Finally the GPU tests themselves
run under pytest with the first form that worked (DIFFGPU_JAX_KERNEL_CALL).
Exit status 0 when the default form (no override) passes everything.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and ("--run" in sys.argv or "--probe" in sys.argv):
    sys.modules["mlir"] = None  # the GPU run must not need MLIR: prove it
    # this process and each probe's hold a JAX client at once: no 75% grab each
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "test", "python"))
import repo_imports  # noqa: E402

repo_imports.bootstrap()

PROBES = ("ffi", "legacy", "ffi+register", "legacy+register")


def prepare(directory: str, chip: str) -> int:
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    import interop_kernels

    interop_kernels.prepare(chip)
    print(f"prepared the dg.jax GPU test programs for {chip} in {os.environ['DIFFGPU_CACHE_DIR']}")
    return 0


def report() -> str | None:
    """Versions, plugin and registrations, as this machine has them."""
    import importlib.metadata as md

    import jax

    for dist in ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt",
                 "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-triton"):
        try:
            print(f"  {dist:20s} {md.version(dist)}")
        except md.PackageNotFoundError:
            print(f"  {dist:20s} -")
    print(f"  backend {jax.default_backend()}; devices {jax.devices()}")
    try:
        from jax._src.lib import gpu_triton as lib
        print(f"  jax._src.lib.gpu_triton: {getattr(lib, '__file__', '?')}")
        plugin = getattr(lib, "_cuda_triton", None)
        print(f"  plugin kernel-call module: {getattr(plugin, '__name__', plugin)} "
              f"({getattr(plugin, '__file__', '-')})")
        print(f"  TritonKernelCall: {hasattr(lib, 'TritonKernelCall')}; "
              f"get_custom_call: {hasattr(lib, 'get_custom_call')}")
        regs = lib.registrations() if hasattr(lib, "registrations") else {}
        print(f"  registrations(): {({k: sorted(v) if isinstance(v, dict) else type(v).__name__ for k, v in regs.items()})}")
    except Exception as exc:  # report, not fail: the probes say the rest
        print(f"  gpu_triton: {type(exc).__name__}: {exc}")
    try:
        from jaxlib import xla_client
        targets = xla_client.custom_call_targets("CUDA")
        mine = sorted(t for t in targets if "triton" in t)
        print(f"  XLA's CUDA targets with 'triton' ({len(targets)} in all): {mine}")
    except Exception as exc:
        print(f"  custom_call_targets('CUDA'): {type(exc).__name__}: {exc}")
    from diffgpu.bridges import jax_kernel_call as kc
    try:
        lib = kc.library()
        default = kc.choose(lib)
        print(f"  dg.jax: forms available {kc.available(lib)}, default {default}")
        return default
    except Exception as exc:
        print(f"  dg.jax: {type(exc).__name__}: {exc}")
        return None


def _register(form: str) -> None:
    from diffgpu.bridges import jax_kernel_call as kc

    lib = kc.library()
    if form == "ffi":
        import jax
        jax.ffi.register_ffi_target(kc.FORMS["ffi"], lib.registrations()[kc.FORMS["ffi"]],
                                    platform="CUDA", api_version=1)
    else:
        from jaxlib import xla_client
        xla_client.register_custom_call_target(kc.FORMS["legacy"], lib.get_custom_call(),
                                               platform="CUDA", api_version=0)
    print(f"  registered {kc.FORMS[form]} again for CUDA")


def probe(probe_name: str) -> int:
    """The GPU tests' computations with one form; prints `RESULT ok|fail`."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import diffgpu.jax as dgj
    from interop_kernels import OPS, reference, wrap

    form, _, reg = probe_name.partition("+")
    if jax.default_backend() != "gpu":
        print(f"  note: backend {jax.default_backend()}, not gpu: dg.jax takes its CPU path")
    os.environ["DIFFGPU_JAX_KERNEL_CALL"] = form
    failed = 0
    try:
        if reg:
            _register(form)
    except Exception as exc:
        print(f"  registration: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        for name in sorted(OPS):
            op = wrap(dgj, name)
            args = {"square_scale": lambda: (jnp.asarray(rng.standard_normal(70)), 1.5),
                    "mul_add": lambda: (jnp.asarray(rng.standard_normal(70)),
                                        jnp.asarray(rng.standard_normal(70))),
                    "dense_tanh": lambda: tuple(jnp.asarray(rng.standard_normal(s))
                                                for s in ((5, 3), (3, 4), (4,)))}[name]()
            pos = tuple(i for i, a in enumerate(args) if not isinstance(a, float))

            def loss(fn, *arrays, args=args, pos=pos):
                full = list(args)
                for p, a in zip(pos, arrays):
                    full[p] = a
                outs = fn(*full)
                outs = outs if isinstance(outs, tuple) else (outs,)
                return sum(jnp.sum(jnp.sin(o) * (1 + k)) for k, o in enumerate(outs))
            arrays = [args[p] for p in pos]
            steps = [
                ("jit forward", lambda: jax.jit(lambda *a: op(*a), static_argnums=(
                    (1,) if name == "square_scale" else ()))(*args),
                 lambda: reference(name, jnp, *args)),
                ("jit grad", lambda: jax.grad(jax.jit(lambda *a: loss(op, *a)),
                                              argnums=tuple(range(len(pos))))(*arrays),
                 lambda: jax.grad(lambda *a: loss(lambda *f: reference(name, jnp, *f), *a),
                                  argnums=tuple(range(len(pos))))(*arrays))]
            for what, got_fn, want_fn in steps:
                try:
                    got, want = got_fn(), want_fn()
                    got = got if isinstance(got, tuple) else (got,)
                    want = want if isinstance(want, tuple) else (want,)
                    err = max(_rel(jnp, g, w) for g, w in zip(got, want))
                    ok = err <= 1e-12 and all(g.shape == w.shape for g, w in zip(got, want))
                    print(f"  {'ok  ' if ok else 'FAIL'} {name:13s} {what:12s} "
                          f"max |err|/(1+|ref|) {err:.2e}")
                except Exception as exc:
                    ok = False
                    msg = " ".join(str(exc).split())[:400]
                    print(f"  FAIL {name:13s} {what:12s} {type(exc).__name__}: {msg}")
                failed += not ok
        failed += _timed(jax, jnp, np, dgj, wrap)
    print(f"RESULT {'ok' if not failed else 'fail'} {probe_name}")
    return 1 if failed else 0


def _rel(jnp, got, want) -> float:
    return float(jnp.max(jnp.abs(got - want) / (1 + jnp.abs(want))))


def _timed(jax, jnp, np, dgj, wrap) -> int:
    """f32 square_scale on 2^20 elements: the jitted kernel vs jnp, per call."""
    x = jnp.asarray(np.random.default_rng(1).standard_normal(1 << 20).astype("float32"))
    ours = jax.jit(lambda x: wrap(dgj, "square_scale")(x, 3.0))
    ref = jax.jit(lambda x: 3.0 * x * x)
    try:
        err = _rel(jnp, ours(x), ref(x))
        times = {}
        for label, fn in (("dg.jax", ours), ("jnp", ref)):
            fn(x).block_until_ready()
            runs = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(200):
                    y = fn(x)
                y.block_until_ready()
                runs.append((time.perf_counter() - t) / 200 * 1e6)
            times[label] = sorted(runs)[2]
        print(f"  {'ok  ' if err <= 1e-6 else 'FAIL'} square_scale  f32 2^20     max |err|/(1+|ref|) {err:.2e}; "
              f"per call {times['dg.jax']:.1f} us (jnp {times['jnp']:.1f} us)")
        return int(err > 1e-6)
    except Exception as exc:
        print(f"  FAIL square_scale  f32 2^20     {type(exc).__name__}: {' '.join(str(exc).split())[:400]}")
        return 1


def run(directory: str) -> int:
    cache = os.path.join(os.path.abspath(directory), "cache")
    if not os.path.isdir(cache):
        print(f"no prepared cache in {cache}: run --prepare {directory} on a machine with MLIR")
        return 2
    env = dict(os.environ, DIFFGPU_CACHE_DIR=cache, DIFFGPU_GPU_CHECK_DIR=os.path.abspath(directory))
    env.pop("DIFFGPU_JAX_KERNEL_CALL", None)
    print("== this machine")
    default = report()
    outcome = {}
    for name in PROBES:
        form = name.partition("+")[0]
        if "+" in name and outcome.get(form) == "ok":
            continue
        print(f"\n== probe {name}")
        sys.stdout.flush()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe", name],
                               env=env, capture_output=True, text=True, timeout=120)
            out = p.stdout + p.stderr
            res = [line.split()[1] for line in p.stdout.splitlines() if line.startswith("RESULT ")]
            outcome[name] = res[-1] if res else f"crashed (rc {p.returncode})"
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            outcome[name] = "timed out (120 s)"
        lines = out.splitlines()
        print("\n".join(lines if outcome[name] in ("ok", "fail") else lines[-40:]))
    print("\n== summary")
    for name, res in outcome.items():
        print(f"  {name:16s} {res}")
    works = [n for n, r in outcome.items() if r == "ok"]
    print(f"  default form (no override): {default}: {outcome.get(default, 'not probed')}")
    status = 0 if outcome.get(default) == "ok" else 1
    if not works:
        print("  no form worked: see the probes above")
        return 1
    form = works[0].partition("+")[0]
    print(f"\n== pytest test_jax.py GPU tests with DIFFGPU_JAX_KERNEL_CALL={form}")
    sys.stdout.flush()
    env["DIFFGPU_JAX_KERNEL_CALL"] = form
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                        "-m", "gpu", os.path.join(REPO, "test", "python", "test_jax.py")],
                       env=env, cwd=REPO)
    return status or r.returncode


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR", help="compile the programs into DIR (needs MLIR)")
    g.add_argument("--run", metavar="DIR", help="report and probe on the GPU machine")
    g.add_argument("--probe", choices=PROBES, help=argparse.SUPPRESS)
    p.add_argument("--chip", default="sm_90", help="GPU target for --prepare (default sm_90)")
    a = p.parse_args(argv)
    if a.prepare:
        return prepare(a.prepare, a.chip)
    if a.probe:
        return probe(a.probe)
    return run(a.run)


if __name__ == "__main__":
    sys.exit(main())
