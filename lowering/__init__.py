"""diffgpu's passes and pipelines (see registry.py for the one list of them)."""
