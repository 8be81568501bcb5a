// A malformed `diffgpu.launch_facts` (lowering/facts/specialize.py, check_facts) is
// an error at the kernel's line from the first pass that reads it, never a
// silent misreading or an internal error.
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics --diffgpu-specialize
// RUN: diffgpu-opt %s --split-input-file --verify-diagnostics -p diffgpu-to-host

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// An extents entry naming argument 9 of a two-argument launch.
// expected-error@+1 {{malformed diffgpu.launch_facts of @k: extents[1][0] names argument 9, but the launch has 2 argument(s)}}
func.func @k(%o: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [true, true], unit_dims = [1 : i64, 2 : i64], extents = [[0 : i64], [9 : i64]], ranks = [1 : i64, 1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// A later argument as the reference, and one that is not its own reference.
// expected-error@+1 {{extents[0][0] names argument 1, a later one}}
func.func @k(%o: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], extents = [[1 : i64], [1 : i64]], ranks = [1 : i64, 1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{extents[2][0] names argument 1, which is not its own reference in dimension 0}}
func.func @k(%o: !A, %x: !A, %y: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], extents = [[0 : i64], [0 : i64], [1 : i64]], ranks = [1 : i64, 1 : i64, 1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Counts: more ranks than arguments, a rank that is not the argument's,
// contiguous for one of two arguments, extents for a scalar.
// expected-error@+1 {{'ranks' = [1, 1, 1] does not match the function's arguments (ranks [1, 1]; -1: a scalar)}}
func.func @k(%o: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1 : i64, 1 : i64, 1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{'ranks' = [1, 2] does not match the function's arguments (ranks [1, -1]; -1: a scalar)}}
func.func @k(%o: !A, %n: f32) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], ranks = [1 : i64, 2 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{'contiguous' has 1 entries for 2 arguments}}
func.func @k(%o: !A, %x: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [true], unit_dims = [], ranks = [1 : i64, 1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{extents[1] has 1 entries for argument 1 of rank -1 (a scalar: none)}}
func.func @k(%o: !A, %n: f32) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [], extents = [[0 : i64], [0 : i64]], ranks = [1 : i64, -1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// Entries: a wrong type, a missing one, an unknown one, a dimension past 2.
// expected-error@+1 {{'noalias' must be a bool, got 1 : i64}}
func.func @k(%o: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = 1, contiguous = [], unit_dims = [], ranks = [1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{missing entry 'ranks'}}
func.func @k(%o: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = []}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{unknown entry 'noalais'}}
func.func @k(%o: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalais = true, noalias = true, contiguous = [], unit_dims = [], ranks = [1 : i64]}} {
  return
}

// -----

!A = memref<?xf32, strided<[?], offset: ?>>
#host = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">

// expected-error@+1 {{'unit_dims' must be distinct dimensions 0, 1 or 2, got [1, 3]}}
func.func @k(%o: !A) attributes {diffgpu.kernel, diffgpu.target = #host, diffgpu.launch_facts = {noalias = true, contiguous = [], unit_dims = [1 : i64, 3 : i64], ranks = [1 : i64]}} {
  return
}

// -----

// Not a dictionary.
// expected-error@+1 {{malformed diffgpu.launch_facts of @k: expected a dictionary, got [true]}}
func.func @k(%o: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">, diffgpu.launch_facts = [true]} {
  return
}
