// Reproducer (uq-fuzz-stage-ir, seed 204 of the full-value campaign in
// docs/robustness.md): test/Target/wave-handwritten.mlir with its 32-key
// tile made 2^31 keys everywhere (a consistent module the verifiers
// accept). `uq-opt THIS --uq-assign-lane-layouts --uq-distribute-to-lanes`
// (and `uq-compile THIS --from=wave`) runs for more than 120 s instead of a
// located "cannot be distributed" error: the lane stages do not check tile
// shapes against the MFMA table yet (lib/Conversion/WaveToLanes). Not run
// by lit (test/fuzz runs .test files only).
// (test RUN line of the seed): uq-opt %s --uq-gpu-lanes --uq-gpu-to-rocdl -o %t.rocdl.mlir
// (test RUN line of the seed): uq-compile %t.rocdl.mlir -o %t.hsaco
// (test RUN line of the seed): uq-compile %s --emit=isa -o %t.s
// (test RUN line of the seed): FileCheck %s --check-prefix=ISA < %t.s
// (test RUN line of the seed): %python %S/Inputs/softmax_norm.py %t.hsaco %t --uq-emu uq-emu | FileCheck %s

// A kernel at the wave-level stage written by hand, as another compiler
// would emit it next to its launch description (the module's uq.kernels):
// the softmax normaliser of 16 FP8 query rows against n keys stored as FP4
// codes with E8M0 scales (68-byte rows: 64 code bytes, 4 scale bytes) --
// the running maximum and sum of exp(q . k - max) over key tiles of 2147483648 with
// the keys past n masked. It uses uq's scaled FP8 x FP4 product on its own
// vectors; uq-opt's distribution and ROCDL pipelines and uq-compile turn it
// into a code object, and the emulator's results match numpy.
// ISA: v_mfma_scale_f32_16x16x128_f8f6f4
// CHECK: n = 1: max err {{.*}}, OK
// CHECK: n = 77: max err {{.*}}, OK
// CHECK: n = 300: max err {{.*}}, OK
module attributes {gpu.container_module, uq.kernels = [
  {name = "softmax_norm", op = "handwritten", grid = [1, 1, 1],
   grid_rule = "one workgroup", block = array<i64: 64, 1, 1>, params = {},
   args = [
     {name = "q", kind = "global_buffer", dtype = "u8", shape = [16, 128],
      access = "read", meaning = "FP8 E4M3 query codes [16, 128]"},
     {name = "keys", kind = "global_buffer", dtype = "u8",
      shape = ["num_keys", 68], access = "read",
      meaning = "keys: 64 FP4 code bytes then 4 E8M0 scale bytes per row"},
     {name = "row_max", kind = "global_buffer", dtype = "f32", shape = [16],
      access = "write", meaning = "max over keys of q . k"},
     {name = "row_sum", kind = "global_buffer", dtype = "f32", shape = [16],
      access = "write", meaning = "sum over keys of exp2(q . k - max)"},
     {name = "num_keys", kind = "by_value", dtype = "i32", shape = [],
      access = "value", meaning = "number of keys (>= 1)"}]}]} {
  gpu.module @uq_kernels {
    gpu.func @softmax_norm(%q: memref<?xi8>, %keys: memref<?xi8>,
                           %rmax: memref<?xf32>, %rsum: memref<?xf32>,
                           %n32: i32) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 2147483648 : index
      %n = arith.index_cast %n32 : i32 to index
      %rows = vector.step : vector<16xindex>
      %all = arith.constant dense<true> : vector<16xi1>
      %c128v = arith.constant dense<128> : vector<16xindex>
      %qoff = arith.muli %rows, %c128v : vector<16xindex>
      %qb = uq.load_rows %q[%qoff] mask %all : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x128xi8>
      %qa = vector.bitcast %qb : vector<16x128xi8> to vector<16x128xf8E4M3FN>
      %one = arith.constant dense<127> : vector<16x4xi8>
      %qs = vector.bitcast %one : vector<16x4xi8> to vector<16x4xf8E8M0FNU>
      %ninf = arith.constant dense<0xFF800000> : vector<16xf32>
      %zero = arith.constant dense<0.0> : vector<16xf32>
      %acc0 = arith.constant dense<0.0> : vector<16x2147483648xf32>
      %ninf2 = arith.constant dense<0xFF800000> : vector<16x2147483648xf32>
      %r:2 = scf.for %t0 = %c0 to %n step %c32 iter_args(%m = %ninf, %l = %zero) -> (vector<16xf32>, vector<16xf32>) {
        %tok0 = vector.broadcast %t0 : index to vector<2147483648xindex>
        %step = vector.step : vector<2147483648xindex>
        %tok = arith.addi %tok0, %step : vector<2147483648xindex>
        %nv = vector.broadcast %n : index to vector<2147483648xindex>
        %valid = arith.cmpi ult, %tok, %nv : vector<2147483648xindex>
        %c68 = arith.constant dense<68> : vector<2147483648xindex>
        %koff = arith.muli %tok, %c68 : vector<2147483648xindex>
        %kb = uq.load_rows %keys[%koff] mask %valid : memref<?xi8>, vector<2147483648xindex>, vector<2147483648xi1> -> vector<2147483648x64xi8>
        %kc = vector.bitcast %kb : vector<2147483648x64xi8> to vector<2147483648x128xf4E2M1FN>
        %c64 = arith.constant dense<64> : vector<2147483648xindex>
        %soff = arith.addi %koff, %c64 : vector<2147483648xindex>
        %sb = uq.load_rows %keys[%soff] mask %valid : memref<?xi8>, vector<2147483648xindex>, vector<2147483648xi1> -> vector<2147483648x4xi8>
        %ks = vector.bitcast %sb : vector<2147483648x4xi8> to vector<2147483648x4xf8E8M0FNU>
        %s = uq.scaled_mma %qa, %qs, %kc, %ks, %acc0 : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<2147483648x128xf4E2M1FN>, vector<2147483648x4xf8E8M0FNU>, vector<16x2147483648xf32>
        %vt = vector.broadcast %valid : vector<2147483648xi1> to vector<16x2147483648xi1>
        %x = arith.select %vt, %s, %ninf2 : vector<16x2147483648xi1>, vector<16x2147483648xf32>
        %mt = vector.multi_reduction <maximumf>, %x, %m [1] : vector<16x2147483648xf32> to vector<16xf32>
        %d = arith.subf %m, %mt : vector<16xf32>
        %alpha = math.exp2 %d : vector<16xf32>
        %mc = vector.shape_cast %mt : vector<16xf32> to vector<16x1xf32>
        %mb = vector.broadcast %mc : vector<16x1xf32> to vector<16x2147483648xf32>
        %xd = arith.subf %x, %mb : vector<16x2147483648xf32>
        %p = math.exp2 %xd : vector<16x2147483648xf32>
        %ls = arith.mulf %l, %alpha : vector<16xf32>
        %ln = vector.multi_reduction <add>, %p, %ls [1] : vector<16x2147483648xf32> to vector<16xf32>
        scf.yield %mt, %ln : vector<16xf32>, vector<16xf32>
      }
      vector.scatter %rmax[%c0] [%rows], %all, %r#0 : memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32>
      vector.scatter %rsum[%c0] [%rows], %all, %r#1 : memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32>
      gpu.return
    }
  }
}
