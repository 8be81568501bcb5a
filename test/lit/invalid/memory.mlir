// Malformed atomics and shared allocations are rejected by the IRDL verifier.
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics

// atomic_add indices are `index`, not i64.
func.func @k(%A: memref<?xf32>, %v: f32, %i: i64) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  %o = "diffgpu.atomic_add"(%A, %v, %i) : (memref<?xf32>, f32, i64) -> f32
  return
}

// -----

// atomic_add returns the old value: the value's type.
func.func @k(%A: memref<?xf32>, %v: f32, %i: index) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected 'f32' but got 'f64'}}
  %o = "diffgpu.atomic_add"(%A, %v, %i) : (memref<?xf32>, f32, index) -> f64
  return
}

// -----

// atomic_add adds into a memref.
func.func @k(%A: f32, %v: f32, %i: index) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected base type 'builtin.memref' but got 'builtin.f32'}}
  %o = "diffgpu.atomic_add"(%A, %v, %i) : (f32, f32, index) -> f32
  return
}

// -----

// shared_alloc yields a memref.
func.func @k() attributes {diffgpu.kernel, diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected base type 'builtin.memref' but got 'builtin.f32'}}
  %s = "diffgpu.shared_alloc"() : () -> f32
  return
}
