"""The registry of diffgpu passes and pipelines, by concept:

- passes.py: `ModulePass`, `register_pass`, `register_pipeline`,
  `register_promise`, `register_upstream_check`, `passes()`, `pipelines()`;
- pipelines.py: textual pipelines (`parse_pipeline`, `expand`,
  `make_options`, `build_pass_manager`, `PipelineError`);
- diagnostics.py: running a pipeline with our diagnostic handler
  (`run_passes`, `PipelineRunError`, `format_diagnostics`).

This module re-exports all of them under their historical import path.
"""
from diffgpu.lowering.common.diagnostics import (PipelineRunError, format_diagnostics,  # noqa: F401
                                          format_location, run_passes)
from diffgpu.lowering.passes import (_PASSES, _PIPELINES, _PROMISES,  # noqa: F401
                                     _UPSTREAM_CHECKS, ModulePass, PassFailure, PipelineInfo,
                                     load_all, passes, pipelines, register_pass,
                                     register_pipeline, register_promise,
                                     register_upstream_check)
from diffgpu.lowering.pipelines import (Element, PipelineError, _add_upstream,  # noqa: F401
                                        _capture_fd2, _convert, _walk, build_pass_manager,
                                        expand, make_options, parse_one, parse_options,
                                        parse_pipeline)
