// diffgpu-vector-access (lowering/gpu/vector_access.py): in gpu.module
// functions, the 2 or 4 loads (stores) of a vector's row that the frontend
// marks `diffgpu.vector_row` become one vector access behind a run-time test
// (innermost stride 1, the row's first element aligned to the vector's size);
// the scalar accesses stay in the other branch.
// RUN: diffgpu-opt %s --split-input-file -p 'diffgpu-vector-access' | FileCheck %s

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// A vec4 load: one inline-asm `ld.v4.f32` (LLVM would split a vector load
// whose elements are all extracted) yielding the four values, which replace
// the loads; the test reads the stride and aligned pointer of the array.
// CHECK-LABEL: gpu.func @load4
// CHECK-SAME: (%[[X:.+]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[I:.+]]: index, %[[O:.+]]: memref<?xf32>)
// CHECK: %[[BASE:.+]], %[[OFF:.+]], %[[SIZES:.+]]:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %[[X]]
// CHECK: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[MASK:.+]] = arith.constant 15 : index
// CHECK: %[[LOW:.+]] = arith.andi %{{.+}}, %[[MASK]] : index
// CHECK: %[[AL:.+]] = arith.cmpi eq, %[[LOW]], %{{.+}} : index
// CHECK: %[[UNIT:.+]] = arith.cmpi eq, %[[STRIDES]]#1, %{{.+}} : index
// CHECK: %[[OK:.+]] = arith.andi %[[AL]], %[[UNIT]] : i1
// CHECK: %[[R:.+]]:4 = scf.if %[[OK]] -> (f32, f32, f32, f32) {
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %[[X]] : memref<?x?xf32, strided<[?, ?], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[AP:.+]] = llvm.extractvalue %[[DESC]][1]
// CHECK: %[[A:.+]] = llvm.getelementptr %[[AP]][%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %[[S:.+]] = llvm.inline_asm has_side_effects
// CHECK-SAME: "ld.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l" %[[A]]
// CHECK: %[[E0:.+]] = llvm.extractvalue %[[S]][0]
// CHECK: scf.yield %[[E0]], %{{.+}}, %{{.+}}, %{{.+}} : f32, f32, f32, f32
// CHECK: } else {
// CHECK-COUNT-4: memref.load %[[X]]
// CHECK: scf.yield
// CHECK: arith.addf %[[R]]#0, %[[R]]#1
// CHECK: arith.addf %{{.+}}, %[[R]]#3
// CHECK-NOT: memref.load %[[X]]
// CHECK: gpu.return
gpu.module @m [#gpu] {
  gpu.func @load4(%x: !M, %i: index, %o: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %a = memref.load %x[%i, %c0] {diffgpu.vector_row} : !M
    %b = memref.load %x[%i, %c1] {diffgpu.vector_row} : !M
    %c = memref.load %x[%i, %c2] {diffgpu.vector_row} : !M
    %d = memref.load %x[%i, %c3] {diffgpu.vector_row} : !M
    %s0 = arith.addf %a, %b : f32
    %s1 = arith.addf %s0, %c : f32
    %s2 = arith.addf %s1, %d : f32
    memref.store %s2, %o[%i] : memref<?xf32>
    gpu.return
  }
}

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// A vec4 store: one `vector.store {alignment = 16}` into a unit-stride view of
// the row, the four scalar stores in the other branch.
// CHECK-LABEL: gpu.func @store4
// CHECK: scf.if %{{.+}} {
// CHECK: %[[ROW:.+]] = memref.reinterpret_cast %{{.+}} to offset: [%{{.+}}], sizes: [4], strides: [1]
// CHECK: %[[V:.+]] = vector.insert %{{.+}}, %{{.+}} [3] : f32 into vector<4xf32>
// CHECK: vector.store %[[V]], %[[ROW]][%{{.+}}] {alignment = 16 : i64}
// CHECK: } else {
// CHECK-COUNT-4: memref.store
// CHECK: }
// CHECK-NOT: memref.store
// CHECK: gpu.return
gpu.module @m [#gpu] {
  gpu.func @store4(%x: !M, %i: index, %v: f32) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    memref.store %v, %x[%i, %c0] {diffgpu.vector_row} : !M
    memref.store %v, %x[%i, %c1] {diffgpu.vector_row} : !M
    memref.store %v, %x[%i, %c2] {diffgpu.vector_row} : !M
    memref.store %v, %x[%i, %c3] {diffgpu.vector_row} : !M
    gpu.return
  }
}

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// float64: a vec2 row is 16 bytes, one `ld.v2.f64`; a mat22's two rows
// (leading subscripts differ) are two groups.
// CHECK-LABEL: gpu.func @load_mat22_f64
// CHECK: arith.constant 15 : index
// CHECK: "ld.v2.f64 {$0, $1}, [$2];", "=d,=d,l"
// CHECK: arith.constant 15 : index
// CHECK: "ld.v2.f64 {$0, $1}, [$2];", "=d,=d,l"
// CHECK: gpu.return
gpu.module @m [#gpu] {
  gpu.func @load_mat22_f64(%x: memref<?x2x2xf64>, %i: index, %o: memref<?xf64>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = memref.load %x[%i, %c0, %c0] {diffgpu.vector_row} : memref<?x2x2xf64>
    %b = memref.load %x[%i, %c0, %c1] {diffgpu.vector_row} : memref<?x2x2xf64>
    %c = memref.load %x[%i, %c1, %c0] {diffgpu.vector_row} : memref<?x2x2xf64>
    %d = memref.load %x[%i, %c1, %c1] {diffgpu.vector_row} : memref<?x2x2xf64>
    %s0 = arith.mulf %a, %d : f64
    %s1 = arith.mulf %b, %c : f64
    %s2 = arith.subf %s0, %s1 : f64
    memref.store %s2, %o[%i] : memref<?xf64>
    gpu.return
  }
}

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// Left alone: a vec3 row (12 bytes: not every row is aligned), unmarked loads,
// a row with a store between its loads, shared memory, a row whose second
// subscript is computed after its first load, and a host function.
// CHECK-LABEL: gpu.func @untouched
// CHECK-NOT: scf.if
// CHECK-NOT: inline_asm
// CHECK-NOT: vector.
// CHECK: gpu.return
// CHECK-LABEL: func.func @host
// CHECK-NOT: inline_asm
// CHECK: return
gpu.module @m [#gpu] {
  gpu.func @untouched(%x: !M, %y: !M, %z: !M, %w: !M, %i: index, %o: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %a = memref.load %x[%i, %c0] {diffgpu.vector_row} : !M
    %b = memref.load %x[%i, %c1] {diffgpu.vector_row} : !M
    %c = memref.load %x[%i, %c2] {diffgpu.vector_row} : !M
    %d = memref.load %y[%i, %c0] : !M
    %e = memref.load %y[%i, %c1] : !M
    %f = memref.load %z[%i, %c0] {diffgpu.vector_row} : !M
    memref.store %a, %o[%i] : memref<?xf32>
    %g = memref.load %z[%i, %c1] {diffgpu.vector_row} : !M
    %sh = memref.alloca() : memref<4x2xf32, #gpu.address_space<workgroup>>
    %h = memref.load %sh[%c0, %c0] {diffgpu.vector_row} : memref<4x2xf32, #gpu.address_space<workgroup>>
    %k = memref.load %sh[%c0, %c1] {diffgpu.vector_row} : memref<4x2xf32, #gpu.address_space<workgroup>>
    %s0 = arith.addf %b, %c : f32
    %s1 = arith.addf %d, %e : f32
    %s2 = arith.addf %f, %g : f32
    %s3 = arith.addf %h, %k : f32
    %w0 = memref.load %w[%i, %c0] {diffgpu.vector_row} : !M
    %j = arith.addi %c0, %c1 : index
    %w1 = memref.load %w[%i, %j] {diffgpu.vector_row} : !M
    %s7 = arith.addf %w0, %w1 : f32
    memref.store %s7, %o[%c2] : memref<?xf32>
    %s4 = arith.addf %s0, %s1 : f32
    %s5 = arith.addf %s2, %s3 : f32
    %s6 = arith.addf %s4, %s5 : f32
    memref.store %s6, %o[%c1] : memref<?xf32>
    gpu.return
  }
}
func.func @host(%x: !M, %i: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %x[%i, %c0] {diffgpu.vector_row} : !M
  %b = memref.load %x[%i, %c1] {diffgpu.vector_row} : !M
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

!M = memref<?x?xf32, strided<[?, ?], offset: ?>>
#gpu = #nvvm.target<O = 3, chip = "sm_90">

// Under diffgpu-index32's data layout (`index` is 32 bits in the gpu.module),
// the descriptor's fields are i32 and the GEP's index too; the pointer itself
// never passes through `index`.
// CHECK-LABEL: gpu.func @load2_index32
// CHECK: builtin.unrealized_conversion_cast %{{.+}} : memref<?x?xf32, strided<[?, ?], offset: ?>> to !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// CHECK: llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK: "ld.v2.f32 {$0, $1}, [$2];", "=f,=f,l"
gpu.module @m [#gpu] attributes {dlti.dl_spec = #dlti.dl_spec<#dlti.dl_entry<index, 32 : i32>>} {
  gpu.func @load2_index32(%x: !M, %i: index, %o: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = memref.load %x[%i, %c0] {diffgpu.vector_row} : !M
    %b = memref.load %x[%i, %c1] {diffgpu.vector_row} : !M
    %s = arith.addf %a, %b : f32
    memref.store %s, %o[%i] : memref<?xf32>
    gpu.return
  }
}
