// RUN: not uq-compile %S/wave-handwritten.mlir --from=lanes --emit=rocdl -o %t.rocdl 2>&1 | FileCheck %s --check-prefix=ARGS
// RUN: test ! -e %t.rocdl
// RUN: %python -c "import re, sys; t = open(sys.argv[1]).read(); open(sys.argv[2], 'w').write(re.sub(r'(?<![A-Za-wyz0-9_%%#@.$])16(?![A-Za-wyz0-9_%%#@.$])', '256', t))" %S/wave-handwritten.mlir %t.big.mlir
// RUN: not timeout 60 uq-compile %t.big.mlir --from=lanes --emit=rocdl -o %t.rocdl 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: not timeout 60 uq-opt %t.big.mlir --uq-gpu-to-rocdl 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: uq-compile %S/wave-handwritten.mlir --from=wave --emit=rocdl -o %t.ok

// Kernels handed over as per-lane code (`--from=lanes`) are checked before
// the ROCDL lowering: wave-level code (whole-tile vectors, here an MFMA
// tile of 256 rows; memref arguments) is a located error instead of the upstream lowering's
// unlocated "bare pointer calling convention" error or, for a tile of
// 2^31 rows, minutes in the lowering (found by uq-fuzz-stage-ir; a tile
// past uq's input bound of 65536 elements per vector, such as 1024 rows of
// 128 bytes, is refused before any stage: test/Pipelines/input-sizes*).
// The same module compiles --from=wave.
// ARGS: wave-handwritten.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'gpu.func' op is not per-lane code: kernel argument 0 is 'memref<?xi8>'; per-lane kernels take buffers as bare pointers
// BIG: big.mlir:{{[0-9]+}}:{{[0-9]+}}: error: '{{.*}}' op is not per-lane code: 'vector<256x{{[0-9]+}}x{{.*}}>' has {{[0-9]+}} elements, more than a lane holds (4096); wave-level kernels compile --from=wave
