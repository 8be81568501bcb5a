"""`dg.torch`: a diffgpu kernel as a PyTorch operator with diffgpu's gradient.

    import diffgpu as dg

    @dg.kernel
    def scale(y, x, a):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = a * x[i]

    op = dg.torch.op(scale, outputs={"y": "x"}, scalars={"a": float},
                     grid=lambda x, **_: (x.shape[0] + 255) // 256, block=256)
    y = op(x, 2.0)              # a torch.Tensor; y.sum().backward() fills x.grad

The kernel is registered with `torch.library` as the custom op
`diffgpu::<name>` with a fake (meta) implementation, so
`torch.compile(fullgraph=True)` traces through it without a graph break. Its
autograd formula is a second custom op, `diffgpu::<name>_vjp`, running
`dg.vjp` (the reverse-mode kernel diffgpu generates). Outputs are allocated by torch
(zero-filled); inputs are taken zero-copy (numpy views on the CPU,
`__cuda_array_interface__` on the GPU) and must not be written by the kernel.
On the GPU the kernel runs on torch's current CUDA stream of the tensors'
device. The gradient of the gradient is not registered: torch's double
backward through the op raises a LaunchError (second order: call dg.autodiff
twice inside a kernel). Importing this module imports torch; `import diffgpu`
does not.
"""
from __future__ import annotations

import itertools
import threading

import torch

from diffgpu.errors import LaunchError
from diffgpu.interop import DTYPES, FLOAT_DTYPES, KernelOp, dtype_name, numpy_dtype, vjp

_LIBS: list = []  # torch.library.Library objects must stay alive
_COUNTER = itertools.count()
_LOCK = threading.Lock()


def op(kernel, *, outputs, grid, block, scalars=None, name=None) -> "KernelFunction":
    """A torch operator running `kernel`; returns a callable taking the
    kernel's inputs (its parameters that are not outputs, in order) and
    returning the output tensor (or a tuple of them, in parameter order).

    - `outputs`: {parameter: spec}: the parameters the kernel writes; spec is
      an input's name (same shape and dtype) or `f(**inputs) -> (shape, dtype)`;
    - `scalars`: {parameter: float or int}: inputs passed by value (the
      operator's gradient for them is None); other inputs are tensors;
    - `grid`: an int/tuple, or `f(**arguments)` of every kernel argument by
      name (tensors, outputs included); `block`: an int/tuple;
    - `name`: the op's name in the `diffgpu` namespace (default: the
      kernel's name plus a number).
    """
    spec = KernelOp(kernel, outputs, grid, block, scalars)
    return KernelFunction(spec, name)


class KernelFunction:
    """A registered operator: call it like a function of the kernel's inputs;
    `qualname` is its name in `torch.ops` (`diffgpu::...`)."""

    def __init__(self, spec: KernelOp, name=None):
        self.spec = spec
        with _LOCK:
            base = name or f"{spec.kernel.name}_{next(_COUNTER)}"
            lib = torch.library.Library("diffgpu", "FRAGMENT")
            _LIBS.append(lib)
        self.qualname = f"diffgpu::{base}"
        self._register(lib, base)
        self._op = getattr(torch.ops.diffgpu, base).default
        self._vjp_op = getattr(torch.ops.diffgpu, base + "_vjp").default

    def __repr__(self) -> str:
        return f"<diffgpu torch op {self.qualname}({', '.join(self.spec.inputs)})>"

    def __call__(self, *inputs):
        out = self._op(*inputs)
        return out if isinstance(out, torch.Tensor) else tuple(out)

    def prepare(self, chip: str, *inputs) -> None:
        """Compile for `chip` (e.g. "sm_90"), on a machine without a GPU, the
        forward and backward programs that calls on inputs of these shapes
        and dtypes launch on a GPU (tensors, numpy arrays or scalars; their
        values do not matter); they go to the disk cache."""
        from diffgpu.interop import prepare

        args = self.spec.bind(inputs)
        prepare(self.spec, chip, {n: _host_view(v.detach().cpu()) if isinstance(v, torch.Tensor)
                                  else v for n, v in args.items()})

    # -- registration -------------------------------------------------------

    def _schema_args(self) -> str:
        s = self.spec
        return ", ".join(f"{_SCALAR_SCHEMA[s.scalars[n]]} {n}" if n in s.scalars
                         else f"Tensor {n}" for n in s.inputs)

    def _register(self, lib, base: str) -> None:
        s = self.spec
        if not s.arrays:
            raise TypeError(f"{s.kernel.name}: an operator needs at least one tensor input")
        grads = ", ".join(f"Tensor grad_{n}" for n in s.outputs)
        lib.define(f"{base}({self._schema_args()}) -> {_rets(len(s.outputs))}")
        lib.define(f"{base}_vjp({self._schema_args()}, {grads}) -> {_rets(len(s.arrays))}")
        q = self.qualname
        torch.library.impl(q, ("cpu", "cuda"), self._forward, lib=lib)
        torch.library.register_fake(q, self._forward_fake, lib=lib)
        torch.library.impl(q + "_vjp", ("cpu", "cuda"), self._backward, lib=lib)
        torch.library.register_fake(q + "_vjp", self._backward_fake, lib=lib)
        torch.library.register_autograd(q, self._autograd_backward,
                                        setup_context=self._setup_context, lib=lib)
        torch.library.register_autograd(q + "_vjp", self._no_double_backward,
                                        setup_context=_no_context, lib=lib)

    # -- forward --------------------------------------------------------------

    def _outputs(self, args: dict, device) -> dict:
        out = {}
        for n in self.spec.outputs:
            shape, dtype = self.spec.out_shape(n, args)
            out[n] = torch.zeros(shape, dtype=_torch_dtype(dtype, n), device=device)
        return out

    def _forward(self, *inputs):
        args = self.spec.bind(inputs)
        device = self._check(args)
        outs = self._outputs(args, device)
        arguments = {**args, **outs}
        launcher = self.spec.launcher(arguments)
        with _on_stream(device):
            launcher(*[_view(arguments[n]) for n in self.spec.kernel.arg_names])
        return _ret([outs[n] for n in self.spec.outputs])

    def _forward_fake(self, *inputs):
        args = self.spec.bind(inputs)
        device = self._check(args, fake=True)
        out = []
        for n in self.spec.outputs:
            shape, dtype = self.spec.out_shape(n, args)
            out.append(torch.empty(shape, dtype=_torch_dtype(dtype, n), device=device))
        return _ret(out)

    # -- backward -------------------------------------------------------------

    def _setup_context(self, ctx, inputs, output):
        s = self.spec
        ctx.scalars = {n: v for n, v in zip(s.inputs, inputs) if n in s.scalars}
        ctx.save_for_backward(*[v for n, v in zip(s.inputs, inputs) if n not in s.scalars])

    def _autograd_backward(self, ctx, *grads):
        s = self.spec
        tensors = dict(zip(s.arrays, ctx.saved_tensors))
        inputs = [ctx.scalars[n] if n in s.scalars else tensors[n] for n in s.inputs]
        args = s.bind(tuple(inputs))
        cots = []
        for n, g in zip(s.outputs, grads):
            if g is None:
                shape, dtype = s.out_shape(n, args)
                g = torch.zeros(shape, dtype=_torch_dtype(dtype, n),
                                device=tensors[s.arrays[0]].device)
            cots.append(g)
        res = self._vjp_op(*inputs, *cots)
        res = dict(zip(s.arrays, res if isinstance(res, (tuple, list)) else (res,)))
        return tuple(None if n in s.scalars or not _is_float(tensors[n]) else res[n]
                     for n in s.inputs)

    def _no_double_backward(self, ctx, *grads):
        raise LaunchError(f"{self.qualname}: the gradient of diffgpu's gradient is not "
                          "registered with torch (for second order, call dg.autodiff twice "
                          "inside a kernel)")

    def _backward(self, *all_args):
        s = self.spec
        args = s.bind(all_args[:len(s.inputs)])
        cots = dict(zip(s.outputs, all_args[len(s.inputs):]))
        device = self._check(args)
        for n, g in cots.items():
            shape, _ = s.out_shape(n, args)
            if tuple(g.shape) != shape or g.device != device:
                raise LaunchError(f"{self.qualname}: gradient of output {n!r} has shape "
                                  f"{tuple(g.shape)} on {g.device}, expected {shape} "
                                  f"on {device}")
        arguments = {**args, **self._outputs(args, device)}
        wrt = [n for n in s.arrays if _is_float(args[n])]
        with _on_stream(device):
            grads = vjp(s.launcher(arguments), s.kernel.arg_names, arguments, cots, wrt,
                        zeros_like=lambda x: torch.zeros(x.shape, dtype=x.dtype, device=device),
                        view=_view, wrap=lambda g: _from_diffgpu(g, device))
        return _ret([grads[n] if n in grads else torch.zeros_like(args[n]) for n in s.arrays])

    def _backward_fake(self, *all_args):
        args = self.spec.bind(all_args[:len(self.spec.inputs)])
        return _ret([torch.empty_like(args[n]) for n in self.spec.arrays])

    # -- checks ---------------------------------------------------------------

    def _check(self, args: dict, fake: bool = False):
        """The device of the array inputs; LaunchError on a bad dtype or a
        mix of devices, before anything runs (`fake`: meta tensors too)."""
        device = None
        for n in self.spec.arrays:
            t = args[n]
            if not isinstance(t, torch.Tensor):
                raise LaunchError(f"{self.qualname}: input {n!r} must be a torch.Tensor, "
                                  f"got {type(t).__name__}")
            if dtype_name(t.dtype) not in DTYPES:
                raise LaunchError(f"{self.qualname}: input {n!r} has dtype {t.dtype}; "
                                  f"diffgpu arrays are {', '.join(DTYPES)}")
            if t.device.type not in ("cpu", "cuda") + (("meta",) if fake else ()):
                raise LaunchError(f"{self.qualname}: input {n!r} is on {t.device}; "
                                  "diffgpu runs on cpu and cuda tensors")
            if device is None:
                device = t.device
            elif t.device != device:
                raise LaunchError(f"{self.qualname}: input {n!r} is on {t.device}, an "
                                  f"earlier input on {device}; move them to one device")
        if device is None:
            raise LaunchError(f"{self.qualname}: at least one input must be a tensor")
        return device


_SCALAR_SCHEMA = {float: "float", int: "int"}


def _no_context(ctx, inputs, output) -> None:
    pass


def _rets(n: int) -> str:
    return "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"


def _ret(tensors: list):
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def _is_float(t) -> bool:
    return dtype_name(t.dtype) in FLOAT_DTYPES


def _torch_dtype(dtype, name: str):
    text = dtype_name(dtype)
    if text not in DTYPES:
        raise LaunchError(f"output {name!r}: dtype {dtype!r}; diffgpu arrays are "
                          f"{', '.join(DTYPES)}")
    return dtype if isinstance(dtype, torch.dtype) else getattr(torch, text)


def _view(x):
    """A zero-copy array diffgpu launches on: a numpy view on the CPU, the
    tensor itself (`__cuda_array_interface__`) on the GPU; scalars as is."""
    if not isinstance(x, torch.Tensor):
        return x
    x = x.detach()
    return _host_view(x) if x.device.type == "cpu" else x


def _host_view(t):
    """The numpy array sharing the memory of CPU tensor `t`: `t.numpy()`, or
    for bfloat16 (which torch cannot give numpy) the numpy view of its bits
    as int16, viewed as ml_dtypes' bfloat16 (same size: any strides)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(numpy_dtype("bfloat16"))
    return t.numpy()


def _from_diffgpu(x, device):
    """A tensor sharing the memory of an array diffgpu returned: numpy on the
    CPU (bfloat16 through its int16 bits, as `_host_view`), on the GPU CuPy
    (`__cuda_array_interface__`, kept alive by the tensor) or, for bfloat16,
    a torch tensor already (runtime/torch16.py)."""
    if device.type == "cpu":
        if dtype_name(x.dtype) == "bfloat16":
            return torch.from_numpy(x.view("int16")).view(torch.bfloat16)
        return torch.from_numpy(x)
    return torch.as_tensor(x, device=device)


class _on_stream:
    """On CUDA: make torch's current stream of `device` CuPy's current stream
    (and the device current), so the launch is ordered with torch's work."""

    def __init__(self, device):
        self.device = device
        self._ctx = []

    def __enter__(self):
        if self.device.type != "cuda":
            return self
        from diffgpu.runtime.gpu import cupy_module

        cupy = cupy_module()
        index = self.device.index if self.device.index is not None \
            else torch.cuda.current_device()
        ptr = torch.cuda.current_stream(self.device).cuda_stream
        self._ctx = [cupy.cuda.Device(index), _external_stream(cupy, ptr, index)]
        for c in self._ctx:
            c.__enter__()
        return self

    def __exit__(self, *exc):
        for c in reversed(self._ctx):
            c.__exit__(*exc)
        self._ctx = []
        return False


_STREAMS: dict = {}


def _external_stream(cupy, ptr: int, index: int):
    """CuPy's view of torch's stream `ptr` on GPU `index`, made once per
    stream (it only wraps the handle). CuPy 14 deprecates `ExternalStream`
    in favour of `Stream.from_external` (the CUDA stream protocol, which
    torch's streams do not all implement): the warning is silenced here."""
    key = (ptr, index)
    s = _STREAMS.get(key)
    if s is None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                s = cupy.cuda.ExternalStream(ptr, index)
            except TypeError:  # CuPy < 13: no device argument
                s = cupy.cuda.ExternalStream(ptr)
        _STREAMS[key] = s
    return s


__all__ = ["op", "KernelFunction"]
