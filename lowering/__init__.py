"""diffgpu's passes and pipelines, by stage (docs/architecture.md draws the
layers; test/python/api/test_import_graph.py checks them). Here at the top:
the pass and pipeline tables (`passes`: passes register themselves into it
and are loaded by module name, never imported here; `pipelines`: textual
pipelines) and `registry`, the one import path of both and of
common/diagnostics.py for the passes above common.

May import: passes.py and pipelines.py, the foundation modules of diffgpu
only; registry.py, lowering.common too.
"""
