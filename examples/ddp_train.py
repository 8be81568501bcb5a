"""Data-parallel training with a diffgpu layer and torch DistributedDataParallel.

The model is `tanh(x @ w + b)` (a diffgpu kernel, its backward diffgpu's
reverse-mode kernel, through `dg.torch.op`) followed by a torch Linear layer.
Each process trains on its shard of every global batch; DDP all-reduces the
gradients. Rank 0 then replays the same steps alone on the whole global batch,
and the script checks that the losses and gradients of every step are equal.

    # 2 GPUs, NCCL, one process per GPU
    torchrun --nproc_per_node=2 examples/ddp_train.py
    # 2 processes sharing 1 GPU, gloo
    python examples/ddp_train.py --nproc 2 --backend gloo
    # CPU only, gloo (what the test suite runs)
    python examples/ddp_train.py --nproc 2 --device cpu

Without torchrun, `--nproc N` starts the N processes itself. A GPU machine
without MLIR runs kernels compiled beforehand on any machine with MLIR (torch
not needed; give --prepare the --batch and --nproc of the run):

    python examples/ddp_train.py --prepare .ddpcache --chip sm_90   # no GPU needed
    torchrun --nproc_per_node=2 examples/ddp_train.py --cache .ddpcache

Each process compiles for, and launches on, its own device: the op takes the
device from its tensors (`cuda:<local rank>`), diffgpu picks the chip of that
device and loads the kernel there, and launches on that device's current
torch stream.
"""
import argparse
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import repo_imports  # noqa: E402  (diffgpu from this checkout where it is not installed)

repo_imports.bootstrap()
import diffgpu as dg  # noqa: E402


@dg.kernel
def dense_tanh(y, x, w, b):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        acc = b[j]
        for k in range(x.shape[1]):
            acc += x[i, k] * w[k, j]
        y[i, j] = dg.tanh(acc)


N_IN, N_HIDDEN, BLOCK = 16, 32, 64


def prepare(directory: str, chip: str, batch: int, nproc: int) -> None:
    """Compile, for `chip`, the layer's forward and backward programs for the
    shard and the whole global batch, float32 and float64, into
    `directory`/cache."""
    os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(directory), "cache")
    import numpy as np

    from diffgpu.interop import KernelOp
    from diffgpu.interop import prepare as prepare_op

    spec = KernelOp(dense_tanh, **OP_ARGS)  # what dg.torch.op(dense_tanh, ...) runs
    for dtype in ("float32", "float64"):
        for rows in sorted({batch // nproc, batch}):
            prepare_op(spec, chip, {"x": np.zeros((rows, N_IN), dtype),
                                    "w": np.zeros((N_IN, N_HIDDEN), dtype),
                                    "b": np.zeros(N_HIDDEN, dtype)})
    print(f"prepared dense_tanh (forward + backward, float32/64, batches "
          f"{sorted({batch // nproc, batch})}) for {chip} in {os.environ['DIFFGPU_CACHE_DIR']}")


#: how the kernel is an operator: y is (rows of x, columns of w); one
#: thread per element of y, 1-D blocks of 64 threads along the rows
OP_ARGS = dict(outputs={"y": lambda x, w, **_: ((x.shape[0], w.shape[1]), x.dtype)},
               grid=lambda x, w, **_: ((x.shape[0] + BLOCK - 1) // BLOCK, w.shape[1]),
               block=(BLOCK, 1))
_OP = []


def dense_tanh_op():
    """The kernel as a torch operator (registered once per process)."""
    if not _OP:
        _OP.append(dg.torch.op(dense_tanh, name="ddp_dense_tanh", **OP_ARGS))
    return _OP[0]


def make_model(torch, dtype, device):
    op = dense_tanh_op()

    class DenseTanh(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.w = torch.nn.Parameter(torch.randn(N_IN, N_HIDDEN, generator=g) / N_IN ** 0.5)
            self.b = torch.nn.Parameter(torch.zeros(N_HIDDEN))

        def forward(self, x):
            return op(x, self.w, self.b)

    torch.manual_seed(1)
    model = torch.nn.Sequential(DenseTanh(), torch.nn.Linear(N_HIDDEN, 1))
    return model.to(dtype=dtype, device=device)


def global_batch(torch, step, size, dtype):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(size, N_IN, generator=g)
    t = torch.sin(x[:, :1] * 2) * torch.cos(x[:, 1:2])
    return x.to(dtype), t.to(dtype)


def train(torch, model, device, steps, batch, dtype, shard=None, ddp=None):
    """Losses and flat gradients of every step (SGD); `shard` = (rank, world)."""
    module = ddp or model
    opt = torch.optim.SGD(module.parameters(), lr=0.2)
    losses, grads = [], []
    for step in range(steps):
        x, t = global_batch(torch, step, batch, dtype)
        if shard is not None:
            rank, world = shard
            n = batch // world
            x, t = x[rank * n:(rank + 1) * n], t[rank * n:(rank + 1) * n]
        x, t = x.to(device), t.to(device)
        opt.zero_grad()
        loss = ((module(x) - t) ** 2).mean()
        loss.backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).cpu())
        losses.append(loss.detach())
        opt.step()
    return losses, grads


def worker(rank, world, args):
    import torch
    import torch.distributed as dist

    if args.cache:
        os.environ["DIFFGPU_CACHE_DIR"] = os.path.join(os.path.abspath(args.cache), "cache")
    import diffgpu.torch  # noqa: F401  (dg.torch)

    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    backend = args.backend or ("nccl" if args.device == "cuda" else "gloo")
    dist.init_process_group(backend, rank=rank, world_size=world)
    dtype = getattr(torch, args.dtype)
    model = make_model(torch, dtype, device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)
    losses, grads = train(torch, model, device, args.steps, args.batch, dtype,
                          shard=(rank, world), ddp=ddp)
    for loss in losses:  # the global loss: the mean of the equal shards' means
        dist.all_reduce(loss)
        loss /= world
    losses = [float(v) for v in losses]
    ok = True
    if rank == 0:
        print(f"[rank 0] {world} processes, backend {backend}, device {device}, "
              f"global batch {args.batch}, {args.dtype}")
        ref_model = make_model(torch, dtype, device)
        ref_losses, ref_grads = train(torch, ref_model, device, args.steps, args.batch, dtype)
        ref_losses = [float(v) for v in ref_losses]
        rtol = 1e-9 if args.dtype == "float64" else 1e-4
        for step, (a, b, ga, gb) in enumerate(zip(losses, ref_losses, grads, ref_grads)):
            dg_ = float((ga - gb).abs().max() / gb.abs().max())
            print(f"step {step}: loss ddp {a:.10f}  single {b:.10f}  "
                  f"max rel grad diff {dg_:.2e}")
            ok &= abs(a - b) <= rtol * abs(b) and dg_ <= rtol
        print("DDP equals the single-process run on the global batch: "
              + ("OK" if ok else "MISMATCH"))
    flag = torch.tensor([0 if ok else 1], device=device if backend == "nccl" else "cpu")
    dist.all_reduce(flag)
    dist.destroy_process_group()
    if int(flag.item()):
        sys.exit(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawned(rank, world, args):
    worker(rank, world, args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prepare", metavar="DIR", help="compile the kernels into DIR and exit")
    p.add_argument("--chip", default="sm_90", help="GPU chip for --prepare (default sm_90)")
    p.add_argument("--cache", metavar="DIR", help="run from kernels --prepare compiled")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None,
                   help="default: cuda if torch sees a GPU, else cpu")
    p.add_argument("--backend", choices=("nccl", "gloo"), default=None,
                   help="default: nccl on cuda, gloo on cpu")
    p.add_argument("--nproc", type=int, default=2,
                   help="processes to start without torchrun (default 2)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--batch", type=int, default=256, help="global batch size")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    args = p.parse_args(argv)
    if args.prepare:
        prepare(args.prepare, args.chip, args.batch, args.nproc)
        return 0
    import torch
    import torch.multiprocessing as mp

    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if "RANK" in os.environ:  # started by torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return 0
    if args.batch % args.nproc:
        p.error(f"--batch {args.batch} is not divisible by --nproc {args.nproc}")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    mp.spawn(_spawned, args=(args.nproc, args), nprocs=args.nproc, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
