// An option of our passes given without a value is an error naming the
// option, before any input is read: `chip=` is not "no chip" (leaving the
// option out is), and a bare `chip` is not `chip=true`.

// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=}' 2>&1 | FileCheck %s --check-prefix=EMPTY --implicit-check-not=Traceback
// RUN: not diffgpu-opt %s -p 'diffgpu-to-ptx{chip=""}' 2>&1 | FileCheck %s --check-prefix=EMPTY --implicit-check-not=Traceback
// RUN: not diffgpu-opt %s --diffgpu-to-ptx=chip= 2>&1 | FileCheck %s --check-prefix=EMPTY --implicit-check-not=Traceback
// EMPTY: diffgpu-opt: error: option 'chip' of 'diffgpu-to-ptx' needs a value (got 'chip='; leave the option out for its default)
// RUN: not diffgpu-opt %s -p 'diffgpu-to-gpu{chip}' 2>&1 | FileCheck %s --check-prefix=BARE --implicit-check-not=Traceback
// BARE: diffgpu-opt: error: option 'chip' of 'diffgpu-to-gpu' needs a value (got 'chip'; leave the option out for its default)

// Left out, the chip is the kernels' own.
// RUN: diffgpu-opt %s -p 'diffgpu-to-gpu' | FileCheck %s --check-prefix=NONE
// NONE: gpu.module

func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return
}
