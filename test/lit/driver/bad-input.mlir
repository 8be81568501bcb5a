// Bad inputs: each gives one clear `diffgpu-opt: error:` or `FILE:LINE:COL:
// error:` line and exit status 1; never a Python traceback or a crash (lit's
// `not` fails on a signal).

// A missing file, a directory, an empty input.
// RUN: not diffgpu-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING --implicit-check-not=Traceback
// MISSING: diffgpu-opt: error: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
// RUN: not diffgpu-opt %S 2>&1 | FileCheck %s --check-prefix=DIR --implicit-check-not=Traceback
// DIR: diffgpu-opt: error: cannot read '{{.*}}driver': is a directory
// RUN: %python -c "" | not diffgpu-opt - 2>&1 | FileCheck %s --check-prefix=EMPTY --implicit-check-not=Traceback
// EMPTY: diffgpu-opt: error: <stdin>: input is empty

// Binary garbage and text that is not UTF-8.
// RUN: %python -c "import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)" > %t.bin
// RUN: not diffgpu-opt %t.bin 2>&1 | FileCheck %s --check-prefix=BINARY --implicit-check-not=Traceback
// BINARY: diffgpu-opt: error: {{.*}}.bin: input is binary (contains NUL bytes), not MLIR text
// RUN: %python -c "import sys; sys.stdout.buffer.write(b'func.func @f() {\n  return\n}\n// caf\xe9\n')" > %t.latin1
// RUN: not diffgpu-opt %t.latin1 2>&1 | FileCheck %s --check-prefix=UTF8 --implicit-check-not=Traceback
// UTF8: diffgpu-opt: error: {{.*}}.latin1:4: input is not valid UTF-8 (byte 0xe9 at offset

// Truncated IR, and an op our dialect does not define.
// RUN: head -n 35 %s | not diffgpu-opt - 2>&1 | FileCheck %s --check-prefix=TRUNC --implicit-check-not=Traceback
// TRUNC: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error:
// RUN: sed -e 's/"diffgpu.barrier"/"diffgpu.nope"/' %s | not diffgpu-opt - 2>&1 | FileCheck %s --check-prefix=NOPE --implicit-check-not=Traceback
// NOPE: <stdin>:[[# @LINE + 12]]:3: error: unregistered operation 'diffgpu.nope' found in dialect ('diffgpu') that does not allow unknown operations

// Nothing is written for a bad `-o`.
// RUN: not diffgpu-opt %s -o %t.no-such-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTDIR --implicit-check-not=Traceback
// OUTDIR: diffgpu-opt: error: cannot open output file '{{.*}}out.mlir': no such directory

// The IR below is valid; the failures above come from the way it is given.
func.func @k(%A: memref<?xf32>) attributes {diffgpu.kernel, diffgpu.target = #llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %A[%t] : memref<?xf32>
  %w = arith.mulf %v, %v : f32
  memref.store %w, %A[%t] : memref<?xf32>
  "diffgpu.barrier"() : () -> ()
  return
}
