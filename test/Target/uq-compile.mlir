// RUN: uq-compile %s -o %t.hsaco
// RUN: llvm-readelf --file-header %t.hsaco | FileCheck %s --check-prefix=ELF
// RUN: llvm-nm --undefined-only %t.hsaco | count 0
// RUN: FileCheck %s --check-prefix=JSON < %t.hsaco.json
// RUN: uq-compile %s --kernels-json %t.other.json -o %t.2.hsaco
// RUN: FileCheck %s --check-prefix=JSON < %t.other.json
// RUN: uq-compile %s --emit=wave -o - | FileCheck %s --check-prefix=WAVE
// RUN: uq-compile %s --emit=layouts -o - | FileCheck %s --check-prefix=LAYOUTS
// RUN: uq-compile %s --emit=lanes -o - | FileCheck %s --check-prefix=KERNEL
// RUN: uq-compile %s --emit=kernel -o - | FileCheck %s --check-prefix=KERNEL
// RUN: uq-compile %s --emit=rocdl -o - | FileCheck %s --check-prefix=ROCDL
// RUN: uq-compile %s --emit=llvmir -o - | FileCheck %s --check-prefix=LLVMIR
// RUN: uq-compile %s --partition-size=64 --emit=wave -o - | FileCheck %s --check-prefix=PART

// uq-compile on a cache write + decode attention with sinks (head_dim 64,
// GQA 4, block size 16): every stage, the code object, and the JSON that
// describes how to launch each kernel with run-time sizes.

// ELF: Class: ELF64
// ELF: Machine: EM_AMDGPU
// ELF: Flags: 0x{{[0-9a-f]+}}, gfx950

// Buffers are 8-byte pointers; the sizes a serving engine changes are i32
// scalars after them, named in the shapes and the grid.
// JSON: "chip": "gfx950"
// JSON: "agpr_count":
// JSON: "args": [
// JSON: "dtype": "f32"
// JSON: "name": "key"
// JSON: "offset": 0
// JSON-NEXT: "shape": [
// JSON-NEXT: "num_tokens",
// JSON-NEXT: 1,
// JSON-NEXT: 64
// JSON: "size": 8
// JSON: "value_kind": "global_buffer"
// JSON: "name": "slot_mapping"
// JSON: "offset": 16
// JSON: "kind": "by_value"
// JSON: "name": "num_tokens"
// JSON: "offset": 32
// JSON: "size": 4
// JSON: "value_kind": "by_value"
// JSON: "block": [
// JSON-NEXT: 64,
// JSON: "grid": [
// JSON-NEXT: "num_tokens",
// JSON-NEXT: 1,
// JSON-NEXT: 2
// JSON: "group_segment_fixed_size": 0
// JSON: "hidden_args": [
// JSON: "name": "enc_0_cache_write"
// JSON: "occupancy": {
// JSON: "params": {
// JSON: "block_size": 16
// JSON: "private_segment_fixed_size": 0
// JSON: "vgpr_count":
// JSON: "name": "query"
// JSON: "name": "query_prepared"
// JSON: "name": "dec_0_query"
// JSON: "name": "partial_sum"
// JSON: "offset": 48
// JSON: "name": "num_partitions"
// JSON: "offset": 68
// JSON: "grid": [
// JSON-NEXT: "num_partitions",
// JSON-NEXT: 1,
// JSON-NEXT: "num_seqs"
// JSON: "group_segment_fixed_size": 5632
// JSON: "name": "dec_0_partial"
// JSON: "partition_size": 256
// JSON: "name": "sinks"
// JSON: "name": "dec_0_merge"

// The tiling stage: whole-wave tiles, uq tile ops, host launches whose grids
// fold for static shapes.
// WAVE: gpu.func @dec_0_partial(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32) kernel
// WAVE: uq.scaled_mma %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
// WAVE: vector.contract
// The distribution stage's layouts: the scaled MFMA's result layout.
// LAYOUTS: uq.scaled_mma {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 2], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>}
// LAYOUTS: uq.to_layout
// KERNEL: gpu.func @enc_0_cache_write(%{{.*}}: !llvm.ptr<1>
// KERNEL: gpu.func @dec_0_partial
// KERNEL: amdgpu.scaled_mfma 16x16x128
// KERNEL: amdgpu.mfma 16x16x32
// KERNEL: gpu.func @dec_0_merge
// ROCDL: llvm.func @dec_0_partial
// ROCDL: rocdl.mfma.scale.f32.16x16x128.f8f6f4
// LLVMIR: define amdgpu_kernel void @dec_0_partial
// LLVMIR: call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4
// Partitions of 64 tokens: 8 blocks of 16 tokens = 128 tokens, 2 partitions
// (the grid folds to constants for static shapes).
// PART: gpu.launch_func @uq_kernels::@dec_0_partial blocks in (%c2, %c1, %c2)
// PART-SAME: %c16_i32 : i32, %c8_i32 : i32, %c2_i32 : i32)

func.func @enc(%k: tensor<5x1x64xf32>, %v: tensor<5x1x64xf32>, %s: tensor<5xi64>,
               %cache: tensor<16x16x1x68xi8>) -> tensor<16x16x1x68xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<5x1x64xf32>, tensor<5x1x64xf32>, tensor<5xi64> into tensor<16x16x1x68xi8>
  return %c : tensor<16x16x1x68xi8>
}

func.func @dec(%q: tensor<2x4x64xf32>, %cache: tensor<16x16x1x68xi8>,
               %bt: tensor<2x8xi32>, %lens: tensor<2xi32>, %sinks: tensor<4xf32>)
    -> tensor<2x4x64xbf16> {
  %o = uq.decode_attention %q, %cache, %bt, %lens sinks %sinks scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x4x64xf32>, tensor<16x16x1x68xi8>, tensor<2x8xi32>, tensor<2xi32>, tensor<4xf32>) -> tensor<2x4x64xbf16>
  return %o : tensor<2x4x64xbf16>
}
