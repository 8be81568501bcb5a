"""Command-line tools: diffgpu-opt."""
