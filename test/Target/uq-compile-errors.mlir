// RUN: not uq-compile %s --emit=bogus -o %t 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not uq-compile %s --chip=gfx942 -o %t.hsaco 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not uq-compile %t.does-not-exist.mlir -o %t.hsaco 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not uq-compile %s --emit=hsaco 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not uq-compile %S/Inputs/bad-ir.mlir -o %t.bad.hsaco 2>&1 | FileCheck %s --check-prefix=BADIR
// RUN: not test -e %t.bad.hsaco
// RUN: not uq-compile %S/Inputs/no-kernel.mlir -o %t.none.hsaco 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// RUN: not test -e %t.none.hsaco
// RUN: not uq-compile %s --from=bogus -o %t 2>&1 | FileCheck %s --check-prefix=FROM
// RUN: not uq-compile %s --from=rocdl --emit=wave -o - 2>&1 | FileCheck %s --check-prefix=PAST
// RUN: uq-compile %s --emit=lanes -o %t.lanes.mlir
// RUN: not uq-compile %t.lanes.mlir --emit=layouts -o - 2>&1 | FileCheck %s --check-prefix=PASTLANES -DFILE=%t.lanes.mlir
// RUN: not uq-compile %s --from=wave -o %t.nolaunch.hsaco 2>&1 | FileCheck %s --check-prefix=NOLAUNCH
// RUN: not test -e %t.nolaunch.hsaco
// RUN: not uq-compile %S/Inputs/wave-no-launch.mlir -o %t.nolaunch2.hsaco 2>&1 | FileCheck %s --check-prefix=NOLAUNCH2
// RUN: not uq-compile %S/Inputs/wave-no-rule.mlir -o %t.norule.hsaco 2>&1 | FileCheck %s --check-prefix=NORULE
// RUN: not test -e %t.norule.hsaco
// RUN: not uq-compile %S/Inputs/wave-no-rule.mlir --emit=layouts -o - 2>&1 | FileCheck %s --check-prefix=NORULE
// RUN: not uq-compile %S/Inputs/bad-ir.mlir --emit=wave -o - 2>&1 | FileCheck %s --check-prefix=BADIR
// RUN: sed 's/<16x/<512x/g' %S/wave-handwritten.mlir > %t.big512.mlir
// RUN: not uq-compile %t.big512.mlir -o %t.big512.hsaco 2>&1 | FileCheck %s --check-prefix=BIGTILE -DFILE=%t.big512.mlir -DROWS=512
// RUN: not test -e %t.big512.hsaco
// RUN: sed 's/<16x/<4096x/g' %S/wave-handwritten.mlir > %t.big4096.mlir
// RUN: not uq-compile %t.big4096.mlir --emit=lanes -o - 2>&1 | FileCheck %s --check-prefix=BIGVEC -DFILE=%t.big4096.mlir
// RUN: sed 's/c32 = arith.constant 32 :/c32 = arith.constant 2147483648 :/; s/<32x/<2147483648x/g; s/x32x/x2147483648x/g' %S/wave-handwritten.mlir > %t.keys.mlir
// RUN: not uq-compile %t.keys.mlir --from=wave -o %t.keys.hsaco 2>&1 | FileCheck %s --check-prefix=BIGKEYS -DFILE=%t.keys.mlir
// RUN: not test -e %t.keys.hsaco

// uq-compile's errors: each names what is wrong, and nothing is written.
// Errors about the input (also the chip and a module without kernels) are
// located MLIR diagnostics: `file:line:col: error: ...`.
// EMIT: error: unknown --emit stage 'bogus' (expected linalg, wave, layouts, lanes, kernel, rocdl, llvmir, isa or hsaco)
// CHIP: uq-compile-errors.mlir:{{[0-9]+}}:{{[0-9]+}}: error: chip 'gfx942' is not supported: uq's kernels need gfx950's scaled MFMA
// MISSING: error: cannot read '{{.*}}does-not-exist.mlir'
// NOOUT: error: a code object needs an output file (-o OUT.hsaco)
// BADIR: bad-ir.mlir:3:{{[0-9]+}}: error: 'uq.decode_attention' op query heads (6) must be a multiple of KV heads (4)
// The GPU stages' errors (--from, a stage mismatch, inputs at the wave
// stage) are located too: at the module (line 1 of an explicit module,
// `file:0:0` for an implicit one) or at the offending op.
// FROM: uq-compile: error: unknown --from stage 'bogus' (expected auto, uq, wave, lanes or rocdl)
// PAST: uq-compile-errors.mlir:0:0: error: the input is already past the stage to emit
// PASTLANES: [[FILE]]:{{[0-9]+}}:{{[0-9]+}}: error: the input is already past the stage to emit
// NOLAUNCH: uq-compile-errors.mlir:0:0: error: the input's kernels have no launch description
// NOLAUNCH2: wave-no-launch.mlir:2:1: error: the input's kernels have no launch description
// NORULE: wave-no-rule.mlir:15:{{[0-9]+}}: error: {{.*}}has no lane-distribution rule
// An MFMA tile of 512 rows (the hand-written wave kernel with 16 rows
// replaced) is checked against the MFMA table at the lane-layout stage, not
// unrolled into tens of thousands of instructions. At 4096 rows the query
// tile (4096x128 bytes) is past uq's input bound of 65536 elements per
// vector, and so is the kernel with 2^31 keys per tile: both refused when
// the input is read, before any stage (docs/robustness.md, "Input
// limits"; the lane stages' own check of such tiles:
// test/Conversion/WaveToLanes/tile-size-invalid.mlir).
// BIGTILE: [[FILE]]:{{[0-9]+}}:{{[0-9]+}}: error: 'uq.scaled_mma' op cannot be distributed: the [[ROWS]]x32x128 tile's operands, scales and accumulator need {{[0-9]+}} registers per lane, more than the 512 of a gfx950 lane
// BIGVEC: [[FILE]]:{{[0-9]+}}:{{[0-9]+}}: error: '{{.*}}' op has the vector type vector<4096x{{[0-9]+}}x{{[a-zA-Z0-9]+}}> of {{[0-9]+}} elements, more than uq's bound of 65536 elements per vector
// BIGKEYS: [[FILE]]:{{[0-9]+}}:{{[0-9]+}}: error: '{{.*}}' op has the vector type vector<{{[0-9x]*}}2147483648{{[0-9x]*}}x{{[a-zA-Z0-9]+}}> of {{[0-9]+}} elements, more than uq's bound of 65536 elements per vector
// NOKERNEL: no-kernel.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the input has no uq op with a gfx950 kernel
func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}
