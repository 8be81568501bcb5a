"""An Active scalar's gradient from its slots (buffers.slot_sum): a Python
float on the CPU; on a GPU a 0-d device array summed on the device, never
copied to the host (dg.vjp then returns without waiting for its kernel)."""
from __future__ import annotations

import numpy as np
import pytest

from diffgpu.hostdiff import buffers as M


class DeviceSlots:
    """Stands for a CuPy array: sums and casts stay on the "device"; any
    way to the host (`get`, `__array__`, `__float__`) fails the test."""

    def __init__(self, a):
        self.a, self.dtype = a, a.dtype

    def sum(self, dtype=None):
        return DeviceSlots(np.asarray(self.a.sum(dtype=dtype)))

    def astype(self, dtype):
        return DeviceSlots(self.a.astype(dtype))

    def get(self):
        raise AssertionError("copied to the host")

    __array__ = __float__ = get


def test_host_slots_give_a_rounded_float():
    slots = np.full(256, 0.1, np.float32)
    g = M.slot_sum(slots)
    assert type(g) is float
    assert g == float(np.float32(slots.sum(dtype=np.float64)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_device_slots_stay_on_the_device(dtype):
    slots = DeviceSlots(np.arange(256, dtype=dtype) * dtype(0.5))
    g = M.slot_sum(slots)
    assert isinstance(g, DeviceSlots) and g.a.shape == () and g.dtype == dtype
    assert g.a == dtype(np.arange(256).sum() * 0.5)
