// Malformed geometry and barrier ops are rejected by the IRDL verifier,
// at the op's line.
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics

// thread_id returns an index, not an i32.
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected 'index' but got 'i32'}}
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> i32
  return
}

// -----

// The `dim` attribute is required.
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{'diffgpu.block_id' op attribute "dim" is expected but not provided}}
  %t = "diffgpu.block_id"() : () -> index
  return
}

// -----

// `dim` is an integer attribute.
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %t = "diffgpu.block_dim"() {dim = 0.0 : f32} : () -> index
  return
}

// -----

// One result only.
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{operation defines 2 results but was provided 1 to bind}}
  %t = "diffgpu.grid_dim"() {dim = 0 : i64} : () -> (index, index)
  return
}

// -----

// The barrier takes no operands.
func.func @k(%x: f32) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{op expects exactly 0 operands, but got 1}}
  "diffgpu.barrier"(%x) : (f32) -> ()
  return
}
