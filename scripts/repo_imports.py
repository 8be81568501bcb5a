"""Make `diffgpu` importable straight from a checkout, without
`pip install -e .` (the GPU machine has no pip registry): python/diffgpu is
the package, lowering/ and dialects/ (and tools/) its subpackages, as the
package-dir mapping of pyproject.toml says.

    sys.path.insert(0, "<repo>/scripts"); import repo_imports; repo_imports.bootstrap()
"""
from __future__ import annotations

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBPACKAGES = ("lowering", "dialects", "tools")


def bootstrap() -> None:
    """Import diffgpu from the repo unless an installed one already works."""
    try:
        import diffgpu.lowering.common.targets  # noqa: F401
        return
    except ImportError:
        pass
    sys.path.insert(0, os.path.join(REPO, "python"))
    import diffgpu  # noqa: F401
    for sub in SUBPACKAGES:
        path = os.path.join(REPO, sub)
        spec = importlib.util.spec_from_file_location(
            f"diffgpu.{sub}", os.path.join(path, "__init__.py"),
            submodule_search_locations=[path])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
