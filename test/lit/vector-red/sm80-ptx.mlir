// REQUIRES: nvptx
// The PTX of sm80.mlir's kernel: the PTX version of sm_80 (7.x), no vector
// `red`, two scalar atomics.
// RUN: diffgpu-opt %S/sm80.mlir -p 'diffgpu-to-ptx{chip=sm_80}' --emit=ptx | FileCheck %s
// CHECK: .version 7.
// CHECK-NOT: red.global.add.v
// CHECK-COUNT-2: atom.global.add.f32
