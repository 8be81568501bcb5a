// REQUIRES: nvptx
// diffgpu-vector-red-expand (lowering/reduce/vector_red.py) defines each helper in
// the LLVM dialect: the element's address from the memref descriptor, then one
// inline-asm vector `red` when the innermost stride is 1 and the address is
// aligned to the vector (16 bytes for 4 floats), else one scalar atomic per
// element, stride apart. The C-interface twin convert-gpu-to-nvvm declares is
// erased. In the PTX (PTX ISA 8.1), both paths remain: this kernel has no
// launch facts that would fold the run-time test away.
// RUN: diffgpu-opt %s -p 'diffgpu-to-nvvm{chip=sm_90}' | FileCheck %s
// RUN: diffgpu-opt %s -p 'diffgpu-to-ptx{chip=sm_90}' --emit=ptx | FileCheck %s --check-prefix=PTX

!A = memref<?xf32, strided<[?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

func.func @k(%a: !A, %v0: f32, %v1: f32, %v2: f32, %v3: f32) attributes {diffgpu.kernel, diffgpu.target = #gpu} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %c4 = arith.constant 4 : index
  %i = arith.muli %t, %c4 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %i1 = arith.addi %i, %c1 : index
  %i2 = arith.addi %i, %c2 : index
  %i3 = arith.addi %i, %c3 : index
  %x0 = "diffgpu.atomic_add"(%a, %v0, %i) : (!A, f32, index) -> f32
  %x1 = "diffgpu.atomic_add"(%a, %v1, %i1) : (!A, f32, index) -> f32
  %x2 = "diffgpu.atomic_add"(%a, %v2, %i2) : (!A, f32, index) -> f32
  %x3 = "diffgpu.atomic_add"(%a, %v3, %i3) : (!A, f32, index) -> f32
  return
}
// CHECK-NOT: _mlir_ciface___dg_red_add
// CHECK: llvm.func internal @[[H:__dg_red_add_v4_0]](%{{.+}}: !llvm.ptr, %[[P:.+]]: !llvm.ptr, %[[OFF:.+]]: i64, %{{.+}}: i64, %[[S:.+]]: i64, %[[I:.+]]: i64, %[[V0:.+]]: f32, %[[V1:.+]]: f32, %[[V2:.+]]: f32, %[[V3:.+]]: f32)
// CHECK-SAME: always_inline
// CHECK: %[[T:.+]] = llvm.mul %[[I]], %[[S]] : i64
// CHECK: %[[L:.+]] = llvm.add %[[OFF]], %[[T]] : i64
// CHECK: %[[A:.+]] = llvm.getelementptr %[[P]][%[[L]]]
// CHECK: %[[ADDR:.+]] = llvm.ptrtoint %[[A]]
// CHECK: llvm.mlir.constant(15 : i64)
// CHECK: llvm.icmp "eq" %[[S]]
// CHECK: llvm.cond_br %{{.+}}, ^[[VEC:.+]], ^[[SCALAR:[a-z0-9]+]]
// CHECK: ^[[VEC]]:
// CHECK-NEXT: llvm.inline_asm has_side_effects "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f,~{memory}" %[[A]], %[[V0]], %[[V1]], %[[V2]], %[[V3]]
// CHECK: ^[[SCALAR]]:
// CHECK-NEXT: llvm.atomicrmw fadd %[[A]], %[[V0]] acq_rel
// CHECK-NEXT: %[[A1:.+]] = llvm.getelementptr %[[A]][%[[S]]]
// CHECK-NEXT: llvm.atomicrmw fadd %[[A1]], %[[V1]] acq_rel
// CHECK-COUNT-2: llvm.atomicrmw fadd
// CHECK-LABEL: llvm.func @k(
// CHECK: llvm.call @[[H]](

// PTX: .version 8.1
// PTX: .target sm_90
// PTX: red.global.add.v4.f32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX-COUNT-4: atom.global.add.f32
