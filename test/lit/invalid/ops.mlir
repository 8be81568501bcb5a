// Unknown ops in our namespace, and text that is not IR, are errors at their
// line (the dialect allows no unregistered ops).
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics

func.func @k() {
  // expected-error@+1 {{unregistered operation 'diffgpu.nope' found in dialect ('diffgpu') that does not allow unknown operations}}
  "diffgpu.nope"() : () -> ()
  return
}

// -----

func.func @k() {
  // expected-error@+1 {{custom op 'this' is unknown}}
  this is not IR
}

// -----

// expected-error@+1 {{undefined symbol alias id 'nope'}}
func.func @k() attributes {diffgpu.target = #nope} {
  return
}
