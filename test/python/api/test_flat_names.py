"""The entry's argument names (race reports, payload `arg_names`) line up
with its argument types for every activity kind, dg.vjp's included."""
import itertools

from diffgpu.driver.launch import flat_names, flat_types
from diffgpu.types import ArrayType, ScalarType

KINDS = ("const", "dup", "dupnoneed", "active", "cot", "grad")


def test_names_match_types_for_every_kind_pair():
    types = [ArrayType("float32", 1), ScalarType("float32")]
    for mode in ("reverse", "forward"):
        for kinds in itertools.product(KINDS, repeat=2):
            diff = (mode, kinds)
            names = flat_names(["a", "s"], diff)
            assert len(names) == len(flat_types(types, diff)), (diff, names)


def test_vjp_kinds_name_their_shadows():
    names = flat_names(["out", "x"], ("reverse", ("cot", "grad")))
    assert names == ["out", "shadow(out)", "x", "shadow(x)"]
