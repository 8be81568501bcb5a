// diffgpu-expand-special-math: diffgpu.erfinv / erfcinv become arith and math
// ops (lowering/common/special_math.py): no diffgpu op is left, the guess
// uses one log of c * (2 - c), and each Newton step one erf, one erfc and one
// exp (two steps for f32, three for f64).
// RUN: diffgpu-opt %s --split-input-file --diffgpu-expand-special-math | FileCheck %s

// erfinv f32: |x| and its complement, the guess, two Newton steps, inf at
// c = 0, the sign of x back
func.func @f(%x: f32) -> f32 {
  %r = "diffgpu.erfinv"(%x) : (f32) -> f32
  return %r : f32
}
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.+]]: f32)
// CHECK-NOT: diffgpu.erfinv
// CHECK: %[[A:.+]] = math.absf %[[X]]
// CHECK: %[[ONE:.+]] = arith.constant 1.0
// CHECK-NEXT: %[[C:.+]] = arith.subf %[[ONE]], %[[A]]
// CHECK: %[[TWO:.+]] = arith.constant 2.0
// CHECK-NEXT: %[[TC:.+]] = arith.subf %[[TWO]], %[[C]]
// CHECK-NEXT: %[[CC:.+]] = arith.mulf %[[C]], %[[TC]]
// CHECK-NEXT: math.log %[[CC]]
// CHECK-COUNT-2: math.erfc
// CHECK-NOT: math.erfc
// CHECK: %[[INF:.+]] = arith.constant 0x7F800000
// CHECK-NEXT: %[[R:.+]] = arith.select %{{.+}}, %[[INF]], %{{.+}}
// CHECK-NEXT: math.copysign %[[R]], %[[X]]
// CHECK-NOT: diffgpu.erfinv

// -----

// erfcinv f64: three Newton steps; past 1 the result is negated
func.func @g(%y: f64) -> f64 {
  %r = "diffgpu.erfcinv"(%y) : (f64) -> f64
  return %r : f64
}
// CHECK-LABEL: func.func @g
// CHECK-SAME: (%[[Y:.+]]: f64)
// CHECK-NOT: diffgpu.erfcinv
// CHECK: %[[HI:.+]] = arith.cmpf ogt, %[[Y]]
// CHECK: %[[C:.+]] = arith.select %[[HI]]
// CHECK-COUNT-3: math.erfc
// CHECK-NOT: math.erfc
// CHECK: %[[INF:.+]] = arith.constant 0x7FF0000000000000
// CHECK-NEXT: %[[R:.+]] = arith.select %{{.+}}, %[[INF]], %{{.+}}
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[R]]
// CHECK-NEXT: %[[OUT:.+]] = arith.select %[[HI]], %[[N]], %[[R]]
// CHECK-NEXT: return %[[OUT]]
