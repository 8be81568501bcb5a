// Generated derivative functions take the target of the op that asked for
// them, never a default: a device function differentiated inside an sm_90
// kernel yields sm_90 derivative functions only (also those generated for
// the functions it calls), and the module still passes target verification.
// RUN: diffgpu-opt %s --split-input-file --diffgpu-autodiff --diffgpu-verify-targets | FileCheck %s

!A = memref<?xf32, strided<[?], offset: ?>>
#sm90 = #nvvm.target<O = 3, chip = "sm_90">

func.func @h(%x: f32) -> f32 attributes {diffgpu.target = #sm90} {
  %s = math.sin %x : f32
  return %s : f32
}
func.func @g(%A: !A, %n: index) attributes {diffgpu.target = #sm90} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %A[%i] : !A
    %r = func.call @h(%a) : (f32) -> f32
    memref.store %r, %A[%i] : !A
  }
  return
}
func.func @k(%A: !A, %dA: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #sm90} {
  "diffgpu.autodiff"(%A, %dA, %n) {callee = @g, activity = ["dup", "const"], diffgpu.target = #sm90, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @k
// CHECK-NOT: diffgpu.autodiff
// CHECK: call @[[REV:__dg_rev_g_[0-9a-f]+]](
// CHECK-DAG: func.func @[[REV]]({{.*}}) attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-DAG: func.func @[[AUG:__dg_aug_h_[0-9a-f]+]]({{.*}}) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-DAG: func.func @[[REVT:__dg_revt_h_[0-9a-f]+]]({{.*}}) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">}
// CHECK-NOT: func.func @__dg_{{.*}}#llvm.target

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// The same inside a host kernel: every generated function is host-target.
func.func @h(%x: f32) -> f32 attributes {diffgpu.target = #host} {
  %s = math.sin %x : f32
  return %s : f32
}
func.func @g(%A: !A, %n: index) attributes {diffgpu.target = #host} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %A[%i] : !A
    %r = func.call @h(%a) : (f32) -> f32
    memref.store %r, %A[%i] : !A
  }
  return
}
func.func @k(%A: !A, %dA: !A, %n: index) attributes {diffgpu.kernel, diffgpu.target = #host} {
  "diffgpu.autodiff"(%A, %dA, %n) {callee = @g, activity = ["dup", "const"], diffgpu.target = #host, groups = array<i32: 2, 1>, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (!A, !A, index) -> ()
  return
}
// CHECK-LABEL: func.func @k
// CHECK: call @[[REV:__dg_rev_g_[0-9a-f]+]](
// CHECK-DAG: func.func @[[REV]]({{.*}}) attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">}
// CHECK-DAG: func.func @{{__dg_aug_h_[0-9a-f]+}}({{.*}}) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">}
// CHECK-DAG: func.func @{{__dg_revt_h_[0-9a-f]+}}({{.*}}) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">}
// CHECK-NOT: func.func @__dg_{{.*}}#nvvm.target

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">
#sm80 = #nvvm.target<O = 3, chip = "sm_80">

// One module, two targets (the frontend emits @f twice, @f__host for the
// host): each kernel's request gets its own derivative function, with its
// own target; two requests with the same activities share one function.
func.func @f(%x: f32) -> f32 attributes {diffgpu.target = #sm80} {
  %p = arith.mulf %x, %x : f32
  return %p : f32
}
func.func @f__host(%x: f32) -> f32 attributes {diffgpu.target = #host} {
  %p = arith.mulf %x, %x : f32
  return %p : f32
}
func.func @kgpu(%x: f32, %d: f32) attributes {diffgpu.kernel, diffgpu.target = #sm80} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f, activity = ["active"], diffgpu.target = #sm80, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  %g2 = "diffgpu.autodiff"(%g, %x) {callee = @f, activity = ["active"], diffgpu.target = #sm80, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}
func.func @khost(%x: f32, %d: f32) attributes {diffgpu.kernel, diffgpu.target = #host} {
  %g = "diffgpu.autodiff"(%d, %x) {callee = @f__host, activity = ["active"], diffgpu.target = #host, groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (f32, f32) -> f32
  return
}
// CHECK-LABEL: func.func @kgpu
// CHECK: %[[G:.+]] = call @[[RG:__dg_rev_f_[0-9a-f]+]](
// CHECK-NEXT: call @[[RG]](%{{.+}}, %[[G]])
// CHECK-LABEL: func.func @khost
// CHECK: call @[[RH:__dg_rev_f__host_[0-9a-f]+]](
// CHECK-DAG: func.func @[[RG]](%{{.+}}: f32, %{{.+}}: f32) -> f32 attributes {diffgpu.target = #nvvm.target<O = 3, chip = "sm_80">}
// CHECK-DAG: func.func @[[RH]](%{{.+}}: f32, %{{.+}}: f32) -> f32 attributes {diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">}
