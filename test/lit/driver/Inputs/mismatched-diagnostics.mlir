// Input of verify-diagnostics.mlir: expectations that do not hold.
func.func @k() attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  // expected-error@+1 {{a message nobody emits}}
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> i32
  return
}

// -----

// expected-warning@below {{'func.func' @m has no diffgpu.target}}
func.func @m() {
  return
}
