// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-lower-to-gpu

// diffgpu.autodiff must have been replaced by diffgpu-autodiff first.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{'diffgpu.autodiff' in '@k' is not lowered: run diffgpu-autodiff first}}
  %g = "diffgpu.autodiff"(%one, %x) {callee = @f, activity = ["active"], diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}

// -----

// Shared memory lives in a kernel's block: a device function cannot allocate it.
func.func @f() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{diffgpu.shared_alloc in '@f': shared memory can only be allocated in a kernel}}
  %s = "diffgpu.shared_alloc"() : () -> memref<4xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// Shared memory needs a static shape in the workgroup address space.
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{must be in #gpu.address_space<workgroup>}}
  %s = "diffgpu.shared_alloc"() : () -> memref<4xf32>
  return
}

// -----

// A geometry op's axis must be 0, 1 or 2.
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{'diffgpu.thread_id' needs a 'dim' attribute of 0, 1 or 2}}
  %t = "diffgpu.thread_id"() {dim = 3 : i64} : () -> index
  return
}

// -----

// The atomic's value must have the memref's element type.
func.func @k(%A: memref<?xf32, strided<[?], offset: ?>>, %v: f64, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{diffgpu.atomic_add: value of type f64 added to a memref of f32}}
  %o = "diffgpu.atomic_add"(%A, %v, %i) : (memref<?xf32, strided<[?], offset: ?>>, f64, index) -> f64
  return
}

// -----

// One index per dimension.
func.func @k(%A: memref<?x?xf32, strided<[?, ?], offset: ?>>, %v: f32, %i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{diffgpu.atomic_add: 1 indices for a memref of rank 2}}
  %o = "diffgpu.atomic_add"(%A, %v, %i) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, f32, index) -> f32
  return
}

// -----

// A GPU function may only call functions of its own target.
func.func private @h(%x: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  return %x : f32
}
func.func @k(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{'@k' (sm_90) calls '@h' (host): a call across targets}}
  %y = func.call @h(%x) : (f32) -> f32
  return
}

// -----

// A host function may not call a GPU function either (it is about to move
// into a gpu.module).
func.func private @g(%x: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  return %x : f32
}
func.func @h(%x: f32) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  // expected-error @+1 {{'@h' (host) calls GPU function '@g' (sm_90): a call across targets}}
  %y = func.call @g(%x) : (f32) -> f32
  return
}

// -----

// A chip the NVPTX backend does not know is rejected before MLIR sees it.
// expected-error @+1 {{kernel '@k' has an unusable GPU target #nvvm.target<O = 3, chip = "sm_99">: unknown NVIDIA chip 'sm_99'}}
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_99">} {
  return
}

// -----

// Kernels return nothing.
// expected-error @+1 {{kernel '@k' returns values; kernels return nothing}}
func.func @k() -> f32 attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %c = arith.constant 1.0 : f32
  return %c : f32
}

// -----

// Memrefs of i1 would abort the NVPTX lowering: a clear error instead.
func.func @k(%i: index) attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error @+1 {{'memref.alloca' in '@k': memref of i1 is not supported on the GPU (use i8 or wider elements)}}
  %t = memref.alloca() : memref<4xi1>
  return
}

// -----

// A kernel with shared memory cannot double as a device function: its
// workgroup memory belongs to the kernel launch.
// expected-error @+1 {{kernel '@inner' allocates shared memory, so it cannot also be called from another function}}
func.func @inner() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %s = "diffgpu.shared_alloc"() : () -> memref<4xf32, #gpu.address_space<workgroup>>
  return
}
func.func @outer() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  func.call @inner() : () -> ()
  return
}
