// A kernel k(n: i32 by value, x: f32 buffer, out: i32 buffer) whose
// metadata names only `out` (LLVM emits no .name for unnamed IR arguments):
// out[0] = n, for the argument-checking tests (kernels-json.test).
.amdgcn_target "amdgcn-amd-amdhsa--gfx950"
.text
.globl k
.p2align 8
.type k,@function
k:
  s_load_dword s4, s[0:1], 0x0
  s_load_dwordx2 s[6:7], s[0:1], 0x10
  v_mov_b32 v1, 0
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v2, s4
  global_store_dword v1, v2, s[6:7]
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx950
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
    .kernarg_segment_size: 24
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .max_flat_workgroup_size: 256
    .args:
      - { .offset: 0, .size: 4, .value_kind: by_value }
      - { .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: out, .offset: 16, .size: 8, .value_kind: global_buffer, .address_space: global }
...
.end_amdgpu_metadata
