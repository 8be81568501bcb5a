// diffgpu-index32 (lowering/facts/specialize_shapes.py): a gpu.module whose kernels
// all have the launch fact `index32` gets the data layout entry `index = 32`
// (convert-gpu-to-nvvm then lowers index to i32); one that allocates on the
// device heap (malloc takes a 64-bit size), or whose kernel lacks the fact,
// keeps 64-bit indices.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-index32 | FileCheck %s

#facts = {noalias = true, contiguous = [true], unit_dims = [1 : i64, 2 : i64], aligned = [true], grid_div = false, grid_div16 = false, extents = [[0 : i64]], index32 = true, ranks = [1 : i64]}
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%x: memref<?xf32, strided<[?], offset: ?>>) kernel attributes {diffgpu.launch_facts = #facts} {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>
      gpu.return
    }
  }
}
// CHECK-LABEL: gpu.module @m
// CHECK-SAME: dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>

// -----

#facts = {noalias = true, contiguous = [true], unit_dims = [1 : i64, 2 : i64], aligned = [true], grid_div = false, grid_div16 = false, extents = [[0 : i64]], index32 = true, ranks = [1 : i64]}
module attributes {gpu.container_module} {
  gpu.module @heap {
    gpu.func @k(%x: memref<?xf32, strided<[?], offset: ?>>) kernel attributes {diffgpu.launch_facts = #facts} {
      %i = gpu.thread_id x
      %t = memref.alloc(%i) : memref<?xf32>
      memref.dealloc %t : memref<?xf32>
      gpu.return
    }
  }
}
// CHECK-LABEL: gpu.module @heap
// CHECK-NOT: dlti.dl_spec

// -----

#facts = {noalias = true, contiguous = [true], unit_dims = [1 : i64, 2 : i64], aligned = [true], grid_div = false, grid_div16 = false, extents = [[0 : i64]], index32 = false, ranks = [1 : i64]}
module attributes {gpu.container_module} {
  gpu.module @wide {
    gpu.func @k(%x: memref<?xf32, strided<[?], offset: ?>>) kernel attributes {diffgpu.launch_facts = #facts} {
      gpu.return
    }
  }
}
// CHECK-LABEL: gpu.module @wide
// CHECK-NOT: dlti.dl_spec

// -----

// Shared memory (a workgroup attribution) keeps 64-bit indices: measured
// slower with 32-bit ones (lowering/facts/specialize_shapes.py).
#facts = {noalias = true, contiguous = [true], unit_dims = [1 : i64, 2 : i64], aligned = [true], grid_div = false, grid_div16 = false, extents = [[0 : i64]], index32 = true, ranks = [1 : i64]}
module attributes {gpu.container_module} {
  gpu.module @shared {
    gpu.func @k(%x: memref<?xf32, strided<[?], offset: ?>>) workgroup(%s : memref<256xf32, #gpu.address_space<workgroup>>) kernel attributes {diffgpu.launch_facts = #facts} {
      %i = gpu.thread_id x
      %v = memref.load %s[%i] : memref<256xf32, #gpu.address_space<workgroup>>
      memref.store %v, %x[%i] : memref<?xf32, strided<[?], offset: ?>>
      gpu.return
    }
  }
}
// CHECK-LABEL: gpu.module @shared
// CHECK-NOT: dlti.dl_spec
