"""What the runtime keeps on disk: the compile cache (`cache`: entries and
their integrity; `cache_key`: keys computed without MLIR; `cache_dir`: where,
and whether it is safe to use; `cache_prune`: the size cap), and the check
that stored code declares the argument layout its record claims (`entry_abi`,
also used by the AOT bundles of diffgpu.driver.bundle).

May import: the foundation modules of diffgpu (errors, types, abi,
_version, switches) and the rest of diffgpu.runtime below it. Never the
compiler.
"""
