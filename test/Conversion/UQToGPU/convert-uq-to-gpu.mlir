// RUN: uq-opt %s --split-input-file --convert-uq-to-gpu | FileCheck %s

// Decode attention becomes a partition kernel and a merge kernel: QK^T on the
// FP8 x FP4 scaled MFMA with the key scale bytes as the B scale operand, PV
// on the bf16 MFMA with V converted by the hardware FP4 -> bf16 conversion.
// The launch description comes first (a module attribute): grid
// (partitions, KV heads, sequences) for the partitions, (heads, sequences)
// for the merge.
// CHECK-LABEL: module attributes {gpu.container_module, uq.kernels = [{args = [{{.*}}name = "query"{{.*}}], block = array<i64: 64, 1, 1>, grid = array<i64: 2, 1, 2>, grid_rule = {{.*}}, name = "decode_0_partial", op = "decode_attention_partial"}, {args = {{.*}}name = "sinks"{{.*}}, grid = array<i64: 8, 2, 1>, {{.*}}name = "decode_0_merge"
// CHECK: gpu.module @uq_kernels
// CHECK: gpu.func @decode_0_partial(%{{.*}}: memref<1024xbf16>, %{{.*}}: memref<69632xi8>, %{{.*}}: memref<64xi32>, %{{.*}}: memref<2xi32>, %{{.*}}: memref<2048xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<32xf32>)
// CHECK-SAME: workgroup(%{{.*}} : memref<512xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<2048xbf16, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK: scf.for
// CHECK: amdgpu.scaled_mfma 16x16x128 ({{.*}} * %{{.*}}) * ({{.*}} * %{{.*}}) + {{.*}} : vector<4xf8E8M0FNU>, vector<32xf8E4M3FN>, vector<4xf8E8M0FNU>, vector<32xf4E2M1FN>, vector<4xf32>
// CHECK: rocdl.exp2
// CHECK: rocdl.cvt.scalef32.pk.bf16.fp4
// CHECK: gpu.barrier
// CHECK: amdgpu.mfma 16x16x32 {{.*}} : vector<8xbf16>, vector<8xbf16>, vector<4xf32>
// CHECK: gpu.func @decode_0_merge(%{{.*}}: memref<2048xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<1024xf32>)
func.func @decode(%q: tensor<2x8x64xbf16>, %cache: tensor<64x16x1x68xi8>,
                  %bt: tensor<2x32xi32>, %lens: tensor<2xi32>, %s: tensor<8xf32>)
    -> tensor<2x8x64xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens sinks %s scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x8x64xbf16>, tensor<64x16x1x68xi8>, tensor<2x32xi32>, tensor<2xi32>, tensor<8xf32>) -> tensor<2x8x64xf32>
  return %o : tensor<2x8x64xf32>
}

// -----

// The cache write: f64 butterfly across lanes (shuffles of both halves of
// the f64), group absmax by xor shuffles, exact power-of-two scaling.
// CHECK-LABEL: module attributes {gpu.container_module, uq.kernels = [{{.*}}grid = array<i64: 3, 2, 2>{{.*}}name = "write_0_cache_write", op = "cache_write"}]}
// CHECK: gpu.func @write_0_cache_write(%{{.*}}: memref<768xf32>, %{{.*}}: memref<768xf32>, %{{.*}}: memref<3xi64>, %{{.*}}: memref<17408xi8>)
// CHECK: gpu.shuffle xor {{.*}} : i32
// CHECK: arith.addf {{.*}} : f64
// CHECK: gpu.shuffle xor {{.*}} : f32
// CHECK: llvm.intr.ldexp
func.func @write(%k: tensor<3x2x128xf32>, %v: tensor<3x2x128xf32>, %s: tensor<3xi64>,
                 %cache: tensor<4x16x2x136xi8>) -> tensor<4x16x2x136xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xf32>, tensor<3x2x128xf32>, tensor<3xi64> into tensor<4x16x2x136xi8>
  return %c : tensor<4x16x2x136xi8>
}

// -----

// scale_rule = mse_search: three candidate exponents, each group's f64
// squared error reduced across lanes, the least error kept.
// CHECK-LABEL: module attributes
// CHECK: gpu.func @write_0_cache_write
// CHECK-COUNT-3: arith.subi %{{.*}}, %{{.*}} : i32
// CHECK: gpu.shuffle xor {{.*}} : i32
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f64
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f64
func.func @write(%k: tensor<3x2x128xf32>, %v: tensor<3x2x128xf32>, %s: tensor<3xi64>,
                 %cache: tensor<4x16x2x136xi8>) -> tensor<4x16x2x136xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>,
       v_format = #uq.kv_format<fp4_e2m1, c = 0.196, scale_rule = mse_search>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xf32>, tensor<3x2x128xf32>, tensor<3xi64> into tensor<4x16x2x136xi8>
  return %c : tensor<4x16x2x136xi8>
}
