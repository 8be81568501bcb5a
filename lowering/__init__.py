"""diffgpu's passes and pipelines (see passes.py for the one list of them)."""
