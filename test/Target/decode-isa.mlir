// RUN: uq-compile %s --emit=isa -o %t.s
// RUN: %python %S/Inputs/check_isa.py %t.s decode_0_partial 128 | FileCheck %s
// RUN: FileCheck %s --check-prefix=ISA < %t.s

// The gfx950 assembly of decode attention (head_dim 128, GQA 8): the key
// loop runs QK^T on the FP8 x FP4 scaled MFMA with the key scales as operand
// (no key unpacking: the only FP4 conversions are the V tile's), PV on the
// bf16 MFMA, no scratch. (No s_barrier: the workgroup is one wave, so LLVM
// keeps only the LDS fence of gpu.barrier.)
// CHECK: check_isa: OK: decode_0_partial: 2 scaled MFMA, 32 FP4->bf16 cvt (V), 8 bf16 MFMA per 32-token iteration of each of 2 key loops
// ISA-LABEL: decode_0_partial:
// ISA-NOT: scratch_
// ISA-DAG: v_mfma_scale_f32_16x16x128_f8f6f4 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], {{.*}} blgp:4
// ISA-DAG: v_exp_f32
// The V tile reaches the bf16 MFMA through transposing LDS reads.
// ISA-DAG: ds_read_b64_tr_b16
// ISA: s_endpgm
// ISA-LABEL: .amdhsa_kernel decode_0_partial
// ISA: .amdhsa_private_segment_fixed_size 0
// ISA-LABEL: .amdhsa_kernel decode_0_merge
// ISA: .amdhsa_private_segment_fixed_size 0
func.func @decode(%q: tensor<2x8x128xbf16>, %cache: tensor<64x16x1x136xi8>,
                  %bt: tensor<2x32xi32>, %lens: tensor<2xi32>) -> tensor<2x8x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x8x128xbf16>, tensor<64x16x1x136xi8>, tensor<2x32xi32>, tensor<2xi32>) -> tensor<2x8x128xf32>
  return %o : tensor<2x8x128xf32>
}
