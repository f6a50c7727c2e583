// RUN: uq-opt %s --uq-gpu-kernels='prefill-shared-v=true' | FileCheck %s
// RUN: uq-opt %s --uq-gpu-kernels='prefill-waves=1' | FileCheck %s --check-prefix=ONE
// RUN: uq-opt %s --uq-gpu-kernels='prefill-shared-v=false' | FileCheck %s --check-prefix=OLD

// Distribution of a kernel of 4 waves (the paged prefill kernel's default
// workgroup, known_block_size 256), with the shared value tile
// (prefill-shared-v): the lane is thread_id.x % 64, the wave
// index thread_id.x / 64 through v_readfirstlane, the kernel's own LDS
// buffers stay one buffer each (the shared bf16 value tile, 2 x 32 rows of
// 128 + 8; the copies of the key slots, 2 x 2688 bytes), and the P layout
// conversion's staging buffer (16 x 32 bf16) is 4 times the one-wave size:
// one part per wave. The PV product reads the shared value tile straight
// in its B-operand layout with transposing reads (no staging buffer for V).
// CHECK-LABEL: gpu.func @paged_0_prefill
// CHECK-SAME: workgroup(%[[V:.*]] : memref<8704xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<5376xi8, #gpu.address_space<workgroup>>, %{{.*}} : memref<2048xbf16, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, uq.distributed
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: arith.remui %[[TID]], %c64
// CHECK: %[[W:.*]] = arith.divui %[[TID]], %c64
// CHECK: %[[W32:.*]] = arith.index_cast %[[W]] : index to i32
// CHECK: rocdl.readfirstlane %[[W32]] : i32
// CHECK: gpu.barrier
// CHECK: amdgpu.transpose_load %[[V]][%{{.*}}] : memref<8704xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
// CHECK-LABEL: gpu.func @paged_0_merge
// One wave: no LDS copy, one-wave staging buffers, the lane is thread_id.x.
// ONE-LABEL: gpu.func @paged_0_prefill
// ONE-SAME: workgroup(%{{.*}} : memref<512xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<4352xbf16, #gpu.address_space<workgroup>>)
// ONE-SAME: known_block_size = array<i32: 64, 1, 1>, uq.distributed
// ONE-NOT: rocdl.readfirstlane
// ONE-LABEL: gpu.func @paged_0_merge
// Without the shared value tile (the default): the copies hold the value slots too, and
// every wave stages its converted V tile (32 rows of 128 + 8 bf16) for the
// transposing reads.
// OLD-LABEL: gpu.func @paged_0_prefill
// OLD-SAME: workgroup(%{{.*}} : memref<10752xi8, #gpu.address_space<workgroup>>, %{{.*}} : memref<2048xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<17408xbf16, #gpu.address_space<workgroup>>)
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
