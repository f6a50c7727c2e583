// RUN: uq-opt %s --uq-gpu-kernels | FileCheck %s
// RUN: uq-opt %s --uq-gpu-kernels='prefill-waves=1' | FileCheck %s --check-prefix=ONE

// Distribution of a kernel of 4 waves (the paged prefill kernel's default
// workgroup, known_block_size 256): the lane is thread_id.x % 64, the wave
// index thread_id.x / 64 through v_readfirstlane, the kernel's own LDS
// copies of a key tile (2 x 5376 bytes) stay one buffer, and each of the layout
// conversions' staging buffers (P: 16 x 32 bf16; V: 32 rows of 128 + 8
// bf16, the transposing reads' padded rows) is 4 times the one-wave size:
// one part per wave.
// CHECK-LABEL: gpu.func @paged_0_prefill
// CHECK-SAME: workgroup(%{{.*}} : memref<10752xi8, #gpu.address_space<workgroup>>, %{{.*}} : memref<2048xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<17408xbf16, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, uq.distributed
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: arith.remui %[[TID]], %c64
// CHECK: %[[W:.*]] = arith.divui %[[TID]], %c64
// CHECK: %[[W32:.*]] = arith.index_cast %[[W]] : index to i32
// CHECK: rocdl.readfirstlane %[[W32]] : i32
// CHECK: gpu.barrier
// CHECK-LABEL: gpu.func @paged_0_merge
// One wave: no LDS copy, one-wave staging buffers, the lane is thread_id.x.
// ONE-LABEL: gpu.func @paged_0_prefill
// ONE-SAME: workgroup(%{{.*}} : memref<512xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<4352xbf16, #gpu.address_space<workgroup>>)
// ONE-SAME: known_block_size = array<i32: 64, 1, 1>, uq.distributed
// ONE-NOT: rocdl.readfirstlane
// ONE-LABEL: gpu.func @paged_0_merge
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
