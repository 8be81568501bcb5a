// Bad options and pipelines are rejected before any input is read, with
// exit status 1 and no traceback; those MLIR would abort on (an unknown
// gpu-module-to-binary format, an unknown chip, O out of range) are caught
// before MLIR sees them.

// Unknown passes and flags, as a flag and inside a pipeline.
// RUN: not diffgpu-opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN --implicit-check-not=Traceback
// UNKNOWN: diffgpu-opt: error: unknown option or pass '--no-such-pass'
// RUN: not diffgpu-opt %s -p 'canonicalize,no-such-pass' 2>&1 | FileCheck %s --check-prefix=UNKNOWN-P --implicit-check-not=Traceback
// UNKNOWN-P: diffgpu-opt: error: unknown pass 'no-such-pass' in pipeline 'canonicalize,no-such-pass'
// RUN: not diffgpu-opt %s --emit=foo 2>&1 | FileCheck %s --check-prefix=EMIT --implicit-check-not=Traceback
// EMIT: diffgpu-opt: error: unknown --emit value 'foo'; expected one of: mlir, llvm, ptx
// RUN: not diffgpu-opt %s --verify-diagnostics=yes 2>&1 | FileCheck %s --check-prefix=FLAGVAL --implicit-check-not=Traceback
// FLAGVAL: diffgpu-opt: error: option '--verify-diagnostics' takes no value
// RUN: not diffgpu-opt %s -o 2>&1 | FileCheck %s --check-prefix=NOVAL --implicit-check-not=Traceback
// NOVAL: diffgpu-opt: error: option '-o' needs a value
// RUN: not diffgpu-opt %s %s 2>&1 | FileCheck %s --check-prefix=TWO --implicit-check-not=Traceback
// TWO: diffgpu-opt: error: only one input file may be given
// RUN: not diffgpu-opt %s -p cse --canonicalize 2>&1 | FileCheck %s --check-prefix=MIX --implicit-check-not=Traceback
// MIX: diffgpu-opt: error: --pass-pipeline/-p cannot be combined with individual pass flags

// Malformed pipelines and options.
// RUN: not diffgpu-opt %s -p 'canonicalize{' 2>&1 | FileCheck %s --check-prefix=SYNTAX --implicit-check-not=Traceback
// SYNTAX: diffgpu-opt: error: missing '}' in pipeline
// RUN: not diffgpu-opt %s --canonicalize=bogus=1 2>&1 | FileCheck %s --check-prefix=UPOPT --implicit-check-not=Traceback
// UPOPT: diffgpu-opt: error: invalid pass 'canonicalize{bogus=1}': {{.*}}no such option bogus
// RUN: not diffgpu-opt %s --diffgpu-verify-targets=foo=1 2>&1 | FileCheck %s --check-prefix=OUROPT --implicit-check-not=Traceback
// OUROPT: diffgpu-opt: error: 'diffgpu-verify-targets' has no option 'foo'

// Options MLIR would abort on.
// RUN: not diffgpu-opt %s -p 'gpu-module-to-binary{format=offload}' 2>&1 | FileCheck %s --check-prefix=FORMAT --implicit-check-not=Traceback
// RUN: not diffgpu-opt %s --gpu-module-to-binary=format=offload 2>&1 | FileCheck %s --check-prefix=FORMAT --implicit-check-not=Traceback
// FORMAT: diffgpu-opt: error: gpu-module-to-binary: unknown format 'offload'; expected one of:
// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_999}' 2>&1 | FileCheck %s --check-prefix=CHIP --implicit-check-not=Traceback
// RUN: not diffgpu-opt %s --diffgpu-to-ptx="chip=sm_999" 2>&1 | FileCheck %s --check-prefix=CHIP --implicit-check-not=Traceback
// RUN: not diffgpu-opt %s --nvvm-attach-target=chip=sm_999 2>&1 | FileCheck %s --check-prefix=CHIP --implicit-check-not=Traceback
// CHIP: diffgpu-opt: error: {{.*}}unknown NVIDIA chip 'sm_999'
// RUN: not diffgpu-opt %s --nvvm-attach-target="chip=sm_90 O=9" 2>&1 | FileCheck %s --check-prefix=OLEVEL --implicit-check-not=Traceback
// OLEVEL: diffgpu-opt: error: nvvm-attach-target: O must be 0, 1, 2 or 3, got '9'

// --emit=ptx needs gpu.binary ops, --emit=llvm the LLVM dialect.
// RUN: not diffgpu-opt %s --emit=ptx 2>&1 | FileCheck %s --check-prefix=NOPTX --implicit-check-not=Traceback
// NOPTX: bad-options.mlir: error: --emit=ptx needs a pipeline that produces gpu.binary, e.g. -p 'diffgpu-to-ptx{chip=sm_90}'
// RUN: not diffgpu-opt %s --emit=llvm 2>&1 | FileCheck %s --check-prefix=NOLLVM --implicit-check-not=Traceback
// NOLLVM: bad-options.mlir:[[# @LINE + 2]]:1: error: --emit=llvm needs a module lowered to the LLVM dialect

func.func @k(%A: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
