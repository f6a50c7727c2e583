// RUN: not uq-opt %s --split-input-file --convert-uq-to-wave 2>&1 | FileCheck %s --check-prefix=SLOT
// RUN: not uq-opt %s --split-input-file --convert-uq-to-wave='partition-size=4294967328' 2>&1 | FileCheck %s --check-prefix=PS
// RUN: not uq-opt %s --split-input-file --convert-uq-to-wave='partition-size=2147483648' 2>&1 | FileCheck %s --check-prefix=PS31
// RUN: not uq-opt %s --split-input-file --convert-uq-to-wave='partition-size=2147483616' 2>&1 | FileCheck %s --check-prefix=PSMAX
// RUN: not uq-opt %s --split-input-file --convert-uq-to-wave='prefill-waves=3' 2>&1 | FileCheck %s --check-prefix=WAVES
// RUN: not uq-compile %s --emit=wave --partition-size=4294967328 -o %t.wave 2>&1 | FileCheck %s --check-prefix=COMPILE-PS
// RUN: test ! -e %t.wave
// RUN: not uq-compile %s --emit=wave --prefill-waves=3 -o %t.wave 2>&1 | FileCheck %s --check-prefix=COMPILE-WAVES
// RUN: test ! -e %t.wave

// Sizes the kernels' 32-bit positions and offsets cannot hold, and
// options outside their documented values, are located errors of
// convert-uq-to-wave (and so of uq-compile), not kernels that compile:
// - a cache block (block_size x KV heads x slot bytes) of 2^31 bytes or more;
// - a split-K partition of more than 2^31 - 32 tokens (2^32 + 32 is a
//   multiple of 32: it used to compile);
// - prefill-waves other than 1, 2, 4 or 8, also for a module without paged
//   attention (it used to pass there).

// The first split: a decode attention with slots of 136 bytes (valid).
// PSMAX: partition_size = 2147483616
// PS: size-limits.mlir:[[# @LINE + 4]]:8: error: 'uq.decode_attention' op partition size 4294967328 exceeds 2147483616 tokens: positions are 32-bit
// PS31: size-limits.mlir:[[# @LINE + 3]]:8: error: 'uq.decode_attention' op partition size 2147483648 exceeds 2147483616 tokens
// WAVES: size-limits.mlir:[[# @LINE + 2]]:8: error: 'uq.decode_attention' op prefill-waves 3 is not supported (1, 2, 4 or 8 waves per workgroup
func.func @decode(%q: tensor<?x4x128xf32>, %cache: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>) -> tensor<?x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x4x128xf32>
  return %o : tensor<?x4x128xf32>
}
// COMPILE-PS: size-limits.mlir:[[# @LINE - 3]]:8: error: 'uq.decode_attention' op partition size 4294967328 exceeds 2147483616 tokens
// COMPILE-WAVES: size-limits.mlir:[[# @LINE - 4]]:8: error: 'uq.decode_attention' op prefill-waves 3 is not supported

// -----

// Slots of 2^31 bytes: one block is 2^35 bytes.
// SLOT: size-limits.mlir:[[# @LINE + 2]]:8: error: 'uq.decode_attention' op has no GPU kernel for a cache block of 16 tokens x 1 KV heads x 2147483648 slot bytes: the kernels' cache offsets are 32-bit within a block (at most 2^31 - 1 bytes
func.func @decode_big_slot(%q: tensor<?x4x128xf32>, %cache: tensor<?x16x1x2147483648xi8>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>) -> tensor<?x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<?x16x1x2147483648xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x4x128xf32>
  return %o : tensor<?x4x128xf32>
}

// -----

// Slots of 2^40 bytes, in a cache write (its product overflows no check).
// SLOT: size-limits.mlir:[[# @LINE + 3]]:8: error: 'uq.cache_write' op has no GPU kernel for a cache block of 16 tokens x 1 KV heads x 1099511627776 slot bytes
func.func @write_huge_slot(%k: tensor<?x1x64xf32>, %v: tensor<?x1x64xf32>, %s: tensor<?xi64>,
                           %cache: tensor<?x16x1x1099511627776xi8>) -> tensor<?x16x1x1099511627776xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?xi64> into tensor<?x16x1x1099511627776xi8>
  return %c : tensor<?x16x1x1099511627776xi8>
}

// -----

// The largest block that fits: 16 x 1 x (2^27 - 1) bytes < 2^31.
// SLOT-NOT: error: 'uq.cache_write' op has no GPU kernel for a cache block of 16 tokens x 1 KV heads x 134217727
func.func @write_big_ok(%k: tensor<?x1x64xf32>, %v: tensor<?x1x64xf32>, %s: tensor<?xi64>,
                        %cache: tensor<?x16x1x134217727xi8>) -> tensor<?x16x1x134217727xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?xi64> into tensor<?x16x1x134217727xi8>
  return %c : tensor<?x16x1x134217727xi8>
}
