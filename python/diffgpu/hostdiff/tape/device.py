"""The tape's work on GPU memory: copies of a buffer's bytes and
fingerprints of them, each as few CUDA calls as it can be.

A copy (`copier`) is one `cudaMemcpyAsync` device to device on the
current stream (the stream the launches run on) into memory of CuPy's pool:
no CuPy array is made. A tape's copies of up to `_SMALL` bytes are carved
from its `Arena`'s chunks (one pool allocation of `CHUNK` bytes holds
`CHUNK // n` copies of n bytes: a recorded launch's copy costs no
allocation of its own, and dropping the tape gives a chunk back at once,
not each copy); a larger copy is one pool allocation. `wrap` makes the
array over the copy, laid out as the buffer, when something reads it (the
reverse, a graph's replay). Being bytes, a copy does not care for the dtype: a
bfloat16 torch tensor (a CuPy bfloat16 array to the tape, arrays.py
`as_array`) is copied the same way.

A fingerprint (`fingerprints`) is one launch of `_FP_SOURCE` per buffer
(compiled once by CuPy), each writing two 64-bit words into one result
array, and one read of that array back for all the buffers. The hash, per
32-bit little-endian word w at index i (the tail bytes of a size not a
multiple of 4 padded with zeros), is the pair

    (sum over i of (w + 1) * (i * 0x9E3779B97F4A7C15 | 1)  mod 2**64,
     max over i of (w ^ (i mod 2**32)))

with the buffer's byte count. A change of one word changes the sum (the
multiplier is odd, so invertible mod 2**64, and the change is below
2**32). `reference` computes the same with numpy (the tests compare).
"""
from __future__ import annotations

import numpy as np

_MUL = 0x9E3779B97F4A7C15
_THREADS = 256
_MAX_BLOCKS = 1024

_FP_SOURCE = r"""
extern "C" __global__ void dg_tape_fingerprint(const unsigned char* p,
        unsigned long long nbytes, int aligned, unsigned long long* out) {
    unsigned long long nw = (nbytes + 3ULL) / 4ULL;
    unsigned long long s = 0ULL, m = 0ULL;
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < nw; i += step) {
        unsigned int w = 0u;
        if (aligned && 4ULL * i + 4ULL <= nbytes) {
            w = ((const unsigned int*)p)[i];
        } else {
            for (int b = 0; b < 4; ++b) {
                unsigned long long at = 4ULL * i + b;
                if (at < nbytes) w |= ((unsigned int)p[at]) << (8 * b);
            }
        }
        unsigned long long wl = (unsigned long long)w;
        s += (wl + 1ULL) * ((i * 0x9E3779B97F4A7C15ULL) | 1ULL);
        unsigned long long x = wl ^ (i & 0xFFFFFFFFULL);
        m = x > m ? x : m;
    }
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, o);
        unsigned long long t = __shfl_down_sync(0xffffffffu, m, o);
        m = t > m ? t : m;
    }
    __shared__ unsigned long long ss[32], sm[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { ss[warp] = s; sm[warp] = m; }
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) >> 5;
        s = lane < nwarps ? ss[lane] : 0ULL;
        m = lane < nwarps ? sm[lane] : 0ULL;
        for (int o = 16; o > 0; o >>= 1) {
            s += __shfl_down_sync(0xffffffffu, s, o);
            unsigned long long t = __shfl_down_sync(0xffffffffu, m, o);
            m = t > m ? t : m;
        }
        if (lane == 0) {
            atomicAdd(out, s);
            atomicMax(out + 1, m);
        }
    }
}
"""

#: per CuPy module (one in practice): the compiled fingerprint kernel
_KERNEL: dict = {}

#: the pool allocations a tape's small copies are carved from (bytes), the
#: largest copy carved (larger ones are allocations of their own: at most an
#: eighth of a chunk is left unused at its end), the alignment of each copy
#: (CUDA's allocations: a view's offset in the copy keeps its alignment)
CHUNK = 1 << 21
_SMALL = CHUNK // 8
_ALIGN = 256


class Arena:
    """Where one tape's copies on one GPU go: chunks of `CHUNK` bytes from
    CuPy's pool, each copy of up to `_SMALL` bytes a range of the current
    chunk (a version holds the chunk's `MemoryPointer` and its offset: the
    chunk lives while a copy in it does, and no object is made per copy). A
    chunk serves one stream (the pool gives memory back per stream): a copy
    on another stream than the chunk's starts a new one."""

    __slots__ = ("chunk", "at", "stream")

    def __init__(self):
        self.chunk = None   # the current chunk's MemoryPointer
        self.at = CHUNK     # its first free byte
        self.stream = None  # the stream it was allocated for

    def release(self) -> None:
        """Stop carving from the current chunk (dropped with its last copy)."""
        self.chunk, self.at, self.stream = None, CHUNK, None


def copy_bytes(cp, ptr: int, n: int, device: int):
    """The `n` bytes at `ptr` on GPU `device` copied into a new allocation of
    CuPy's (`cp`'s) memory pool there, on the current stream: its
    MemoryPointer, no array made."""
    if cp.cuda.runtime.getDevice() != device:
        with cp.cuda.Device(device):
            return copy_bytes(cp, ptr, n, device)
    mem = cp.cuda.alloc(n)
    if n:
        cp.cuda.runtime.memcpyAsync(mem.ptr, ptr, n, 3, cp.cuda.get_current_stream().ptr)
    return mem


def copier(cp, ptr: int, n: int, device: int, arena: Arena | None = None):
    """A call `copy(v)` copying the `n` bytes at `ptr` on GPU `device` for
    version `v` into CuPy's (`cp`'s) memory pool there, on the current
    stream (the launches'): into `arena`'s current chunk when given and `n`
    is at most `_SMALL`, else into an allocation of its own. It sets
    `v.copy` to the allocation's memory pointer and `v.at` to the copy's
    offset in it; no array is made (`wrap` makes the array over it)."""
    alloc, memcpy, stream = cp.cuda.alloc, cp.cuda.runtime.memcpyAsync, cp.cuda.get_current_stream
    current, Device = cp.cuda.runtime.getDevice, cp.cuda.Device
    size = -(-n // _ALIGN) * _ALIGN
    if arena is None or not 0 < n <= _SMALL:
        def copy(v):
            if current() != device:  # (as a launch does: on the buffer's GPU)
                with Device(device):
                    return copy(v)
            mem = alloc(n)
            if n:
                memcpy(mem.ptr, ptr, n, 3, stream().ptr)  # 3: cudaMemcpyDeviceToDevice
            v.copy = mem
        return copy

    def carve(v):
        if current() != device:
            with Device(device):
                return carve(v)
        s = stream().ptr
        at = arena.at
        if at + size > CHUNK or arena.stream != s:
            arena.chunk, arena.stream, at = alloc(CHUNK), s, 0
        arena.at = at + size
        chunk = v.copy = arena.chunk
        v.at = at
        memcpy(chunk.ptr + at, ptr, n, 3, s)
    return carve


def wrap(root, mem, cp, at: int = 0):
    """The CuPy array over `mem` (at byte offset `at`) laid out as `root`
    (shape, dtype, strides)."""
    return cp.ndarray(root.shape, root.dtype, mem + at if at else mem, strides=root.strides)


def reference(flat_bytes) -> tuple:
    """The fingerprint of a host byte array (numpy uint8), as the kernel
    computes it: (sum, max, number of bytes)."""
    n = int(flat_bytes.size)
    pad = (-n) % 4
    if pad:
        flat_bytes = np.concatenate([flat_bytes, np.zeros(pad, np.uint8)])
    w = flat_bytes.view("<u4").astype(np.uint64)
    idx = np.arange(w.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        mixed = (w + np.uint64(1)) * ((idx * np.uint64(_MUL)) | np.uint64(1))
        total = int(mixed.sum(dtype=np.uint64)) if w.size else 0
    top = int((w ^ (idx & np.uint64(0xFFFFFFFF))).max()) if w.size else 0
    return total % (1 << 64), top, n


def _kernel(cp):
    k = _KERNEL.get(id(cp))
    if k is None:
        k = _KERNEL[id(cp)] = cp.RawKernel(_FP_SOURCE, "dg_tape_fingerprint")
    return k


def fingerprints(ptrs_sizes, cp, device=None) -> list:
    """The fingerprints of device buffers given as (data pointer, bytes) on
    GPU `device` (None: the current one): one kernel launch each into one
    result array on the current stream, one read back for all."""
    if not ptrs_sizes:
        return []
    if device is not None and cp.cuda.runtime.getDevice() != device:
        with cp.cuda.Device(device):
            return fingerprints(ptrs_sizes, cp)
    out = cp.zeros(2 * len(ptrs_sizes), dtype=np.uint64)
    k = _kernel(cp)
    base = out.data.ptr
    for j, (ptr, n) in enumerate(ptrs_sizes):
        if n:
            words = (n + 3) // 4
            blocks = max(1, min(_MAX_BLOCKS, -(-words // _THREADS)))
            k((blocks,), (_THREADS,), (np.uint64(ptr), np.uint64(n), np.int32(ptr % 4 == 0),
                                      np.uint64(base + 16 * j)))
    host = out.get()
    return [(int(host[2 * j]), int(host[2 * j + 1]), n) for j, (_p, n) in enumerate(ptrs_sizes)]


__all__ = ["Arena", "CHUNK", "copy_bytes", "copier", "wrap", "reference", "fingerprints"]
