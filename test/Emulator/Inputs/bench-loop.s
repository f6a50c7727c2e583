// Benchmark kernel (not a test): 1000 iterations of 8 VALU ops + loop
// control per wave. Run:
//   llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I test/Emulator/Inputs test/Emulator/Inputs/bench-loop.s -o /tmp/b.o
//   ld.lld -shared /tmp/b.o -o /tmp/b.hsaco
//   uq-emu /tmp/b.hsaco --kernel k --grid 16 --block 256 --arg zeros:4 --arg zeros:4 --arg zeros:16384 --bench 3
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0
  v_cvt_f32_u32 v3, v2
  v_mov_b32 v4, 1.0
  v_mov_b32 v5, 0
  s_movk_i32 s10, 1000
.Lloop:
  v_fma_f32 v4, v4, 0.5, v3
  v_add_u32 v5, v5, v2
  v_xor_b32 v6, v5, v2
  v_lshlrev_b32 v7, 3, v6
  v_max_f32 v8, v4, v3
  v_mul_f32 v9, v8, v4
  v_and_b32 v10, v7, v5
  v_add_f32 v4, v9, 1.0
  s_sub_u32 s10, s10, 1
  s_cmp_lg_u32 s10, 0
  s_cbranch_scc1 .Lloop
  s_lshl_b32 s11, s2, 10
  v_add_u32 v1, s11, v1
  global_store_dword v1, v4, s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
