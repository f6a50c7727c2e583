// RUN: uq-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the uq attributes and op verifiers, one case each.

// An element code that does not exist.
// expected-error @+1 {{unknown element code 'fp5' (expected fp4_e2m1, fp8_e4m3 or bf16)}}
func.func @f(%x: tensor<4x128xf32>) attributes {f = #uq.kv_format<fp5>} { return }

// -----

// expected-error @+1 {{unknown kv_format field 'bits' (expected group, scale, c, rotation, rounding or scale_rule)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, bits = 4>} { return }

// -----

// expected-error @+1 {{'c' given twice}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = 0.1, c = 0.2>} { return }

// -----

// expected-error @+1 {{unknown scale 'e5m2' (expected none, ue8m0 or e4m3)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, scale = e5m2>} { return }

// -----

// expected-error @+1 {{scale = e4m3 is defined for fp4_e2m1 elements only}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, scale = e4m3>} { return }

// -----

// expected-error @+1 {{unknown rotation 'random' (expected none or hadamard)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, rotation = random>} { return }

// -----

// expected-error @+1 {{unknown rounding 'up' (expected ties_down or nearest_even)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, rounding = up>} { return }

// -----

// expected-error @+1 {{fp4_e2m1 needs per-group scales (scale = ue8m0)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, scale = none>} { return }

// -----

// expected-error @+1 {{a group size needs scales (scale = ue8m0)}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, group = 32>} { return }

// -----

// expected-error @+1 {{bf16 elements take no scale}}
func.func @f() attributes {f = #uq.kv_format<bf16, scale = ue8m0>} { return }

// -----

// expected-error @+1 {{group size must be a positive even number, got 7}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, group = 7>} { return }

// -----

// expected-error @+1 {{c must be a finite, positive, normal f32 value (in [1.1754944e-38, 3.4028235e+38]), got -0.5}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = -0.5>} { return }

// -----

// c is multiplied in f32: beyond FLT_MAX it is infinite there.
// expected-error @+1 {{c must be a finite, positive, normal f32 value (in [1.1754944e-38, 3.4028235e+38]), got 1.0e+39}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = 1.0e39>} { return }

// -----

// Subnormal in f32 (1e-45 is its smallest subnormal).
// expected-error @+1 {{c must be a finite, positive, normal f32 value (in [1.1754944e-38, 3.4028235e+38]), got 1.0e-45}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = 1.0e-45>} { return }

// -----

// Just below the smallest normal f32, 2^-126 = 1.1754943508222875e-38.
// expected-error @+1 {{got 1.1754943508222874e-38}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = 1.1754943508222874e-38>} { return }

// -----

// expected-error @+1 {{c must be a finite, positive, normal f32 value (in [1.1754944e-38, 3.4028235e+38]), got 0.0}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, c = 0.0>} { return }

// -----

// MX-style FP8 (E4M3 codes, UE8M0 group scales) has no lowering.
// expected-error @+1 {{fp8_e4m3 with ue8m0 scales (MX-FP8) is not supported: no lowering or reference implements it; use fp8_e4m3 without scales or fp4_e2m1}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, scale = ue8m0>} { return }

// -----

// Without scales there is no scale rule: a c would not even be printed.
// expected-error @+1 {{c needs scales (scale = ue8m0); fp8_e4m3 without scales has no scale rule}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, c = 0.5>} { return }

// -----

// expected-error @+1 {{c needs scales (scale = ue8m0); bf16 without scales has no scale rule}}
func.func @f() attributes {f = #uq.kv_format<bf16, c = 0.5>} { return }

// -----

// expected-error @+1 {{fp8_e4m3 elements round to nearest even only}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, rounding = ties_down>} { return }

// -----

// expected-error @+1 {{unknown scale_rule 'best' (expected log_round or mse_search)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, scale_rule = best>} { return }

// -----

// expected-error @+1 {{scale_rule = mse_search is defined for fp4_e2m1 with scales only}}
func.func @f() attributes {f = #uq.kv_format<fp8_e4m3, scale_rule = mse_search>} { return }

// -----

// expected-error @+1 {{scale_rule = mse_search needs a power-of-two group size, got 48}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, group = 48, scale_rule = mse_search>} { return }
// -----

func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{'uq.rotate' op input must have rank >= 1}}
  %r = uq.rotate %x : tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<4x96xf32>) {
  // expected-error @+1 {{'uq.rotate' op last dimension must be a static power of two, got 96}}
  %r = uq.rotate %x : tensor<4x96xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{'uq.quantize' op values must have rank >= 1}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<f32> -> tensor<i8>, tensor<i8>
  return
}

// -----

func.func @f(%x: tensor<4x?xf32>) {
  // expected-error @+1 {{'uq.quantize' op row head dimension must be static}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x?xf32> -> tensor<4x?xi8>, tensor<4x?xi8>
  return
}

// -----

func.func @f(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{'uq.quantize' op row head dimension must be positive}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x0xf32> -> tensor<4x0xi8>, tensor<4x0xi8>
  return
}

// -----

func.func @f(%x: tensor<4x48xf32>) {
  // expected-error @+1 {{'uq.quantize' op row head dimension 48 must be a multiple of the group size 32}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x48xf32> -> tensor<4x24xi8>, tensor<4x1xi8>
  return
}

// -----

func.func @f(%x: tensor<4x96xf32>) {
  // expected-error @+1 {{'uq.quantize' op row head dimension 96 must be a power of two for the Walsh-Hadamard rotation}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x96xf32> -> tensor<4x48xi8>, tensor<4x3xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op codes of fp4_e2m1 must have element type i8, got 'bf16'}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x32xbf16>, tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op values and codes must have the same rank}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<128xi8>, tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op values and codes must agree on dimension 0}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<5x32xi8>, tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op codes dimension 1 (bytes of codes per row) must be 32, got 64}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x64xi8>, tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op a format with scales needs a scales tensor}}
  %c = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x32xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op a format without scales takes no scales tensor}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp8_e4m3>} : tensor<4x64xf32> -> tensor<4x64xi8>, tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'uq.quantize' op values and scales must agree on dimension 0}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x32xi8>, tensor<3x2xi8>
  return
}

// -----

func.func @f(%c: tensor<4x32xi8>, %s: tensor<4x4xi8>) {
  // expected-error @+1 {{'uq.dequantize' op scales dimension 1 (scale bytes per row) must be 2, got 4}}
  %x = uq.dequantize %c, %s {format = #uq.kv_format<fp4_e2m1>} : tensor<4x32xi8>, tensor<4x4xi8> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%k: tensor<3x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op key must have rank 3, got 'tensor<3x128xf32>'}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x128xf32>, tensor<3x128xf32>, tensor<3xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %v: tensor<3x1x64xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op key and value must have the same shape}}
  %c = uq.cache_write %k, %v, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x64xf32>, tensor<3xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<3x1xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op slot_mapping must have rank 1}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<3x1xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<4xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op slot_mapping dimension 0 (tokens) must be 3, got 4}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<4xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x?x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op key dimension 1 (KV heads) must be static}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x?x128xf32>, tensor<3x?x128xf32>, tensor<3xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op cache must have rank 4}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<3xi64> into tensor<8x16x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x?x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op cache dimension 1 (block size, KV heads, slot bytes) must be static}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<3xi64> into tensor<8x?x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x2x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op cache dimension 2 (KV heads) must be 2, got 1}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x2x128xf32>, tensor<3x2x128xf32>, tensor<3xi64> into tensor<8x16x1x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x1x128xi8>) {
  // expected-error @+1 {{'uq.cache_write' op cache slots of 128 bytes are too small: K and V of head dimension 128 need 136 bytes}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<3xi64> into tensor<8x16x1x128xi8>
  return
}

// -----

func.func @f(%k: tensor<3x1x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x0x1x136xi8>) {
  // expected-error @+1 {{'uq.cache_write' op cache block size must be positive}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xf32>, tensor<3x1x128xf32>, tensor<3xi64> into tensor<8x0x1x136xi8>
  return
}

// -----

func.func @f(%q: tensor<2x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op query must have rank 3}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x?x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op query heads and head dimension must be static}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x?x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x?x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x?x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op cache KV heads must be static and positive}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x?x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x6x128xf32>, %cache: tensor<8x16x4x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op query heads (6) must be a multiple of KV heads (4)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x6x128xf32>, tensor<8x16x4x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x6x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x32x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op GQA ratio 32 exceeds 16 (the query heads of one KV head must fit 16 MFMA rows)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x32x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x32x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<3x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op block_tables dimension 0 (sequences) must be 2, got 3}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<3x4xi32>, tensor<2xi32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2x1xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op seq_lens must have rank 1}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2x1xi32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op scale must be finite}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 0x7F800000 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'uq.decode_attention' op sinks dimension 0 (query heads) must be 4, got 2}}
  %o = uq.decode_attention %q, %cache, %bt, %l sinks %s scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op result dimension 2 (same as the query) must be 128, got 64}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> tensor<2x4x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op out must have rank 4}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op max and sum must have the same type}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x3xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op out dimension 3 (head dimension) must be 128, got 64}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x2x64xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op max dimension 2 (same as out) must be 2, got 3}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x2x128xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x?xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op the partition count and the block table width must be static}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x?xi32>, tensor<2xi32>) -> (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op out dimension 2 (partitions) must be 2 = ceil(64 tokens / partition 32), got 3}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 32 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x3x128xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op attribute 'partition_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<2x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>) -> (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>)
  return
}

// -----

// paged_attention: the query is [num_tokens, Hq, D].
func.func @f(%q: tensor<?x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query must have rank 3}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x128xf32>
  return
}

// -----

// paged_attention: Hq and D are static (num_tokens may be dynamic).
func.func @f(%q: tensor<?x?x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query heads and head dimension must be static}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x?x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x?x128xf32>
  return
}

// -----

// paged_attention: the cache is rank 4.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op cache must have rank 4}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: Hkv is static.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x?x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op cache KV heads must be static and positive}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x?x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: Hq is a multiple of Hkv.
func.func @f(%q: tensor<?x6x128xf32>, %cache: tensor<8x16x4x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query heads (6) must be a multiple of KV heads (4)}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x6x128xf32>, tensor<8x16x4x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x6x128xf32>
  return
}

// -----

// paged_attention: GQA ratio at most 16.
func.func @f(%q: tensor<?x32x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op GQA ratio 32 exceeds 16 (the query heads of one KV head must fit 16 MFMA rows)}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x32x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x32x128xf32>
  return
}

// -----

// paged_attention: D a multiple of the group size.
func.func @f(%q: tensor<?x4x48xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op key head dimension 48 must be a multiple of the group size 32}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x48xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x48xf32>
  return
}

// -----

// paged_attention: D a power of two for rotated keys.
func.func @f(%q: tensor<?x4x96xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op key head dimension 96 must be a power of two for the Walsh-Hadamard rotation}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x96xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x96xf32>
  return
}

// -----

// paged_attention: D positive.
func.func @f(%q: tensor<?x4x0xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op key head dimension must be positive}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x0xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x0xf32>
  return
}

// -----

// paged_attention: block size, Hkv and slot bytes are static (num_blocks may be dynamic).
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<?x?x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op cache dimension 1 (block size, KV heads, slot bytes) must be static}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<?x?x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: the slots hold K and V.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x100xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op cache slots of 100 bytes are too small: K and V of head dimension 128 need 136 bytes}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x100xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: block size positive.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x0x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op cache block size must be positive}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x0x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: seq_lens is [num_seqs].
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2x1xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op seq_lens must have rank 1}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2x1xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: block_tables is [num_seqs, max_blocks].
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<8xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op block_tables must have rank 2}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<8xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: query_start_loc is [num_seqs + 1].
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3x1xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query_start_loc must have rank 1}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3x1xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: query_start_loc has at least one entry.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<?x4xi32>, %l: tensor<?xi32>, %qsl: tensor<0xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query_start_loc must have num_seqs + 1 >= 1 entries, got 0}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<?x4xi32>, tensor<?xi32>, tensor<0xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: one block-table row per sequence.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<3x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op block_tables dimension 0 (sequences) must be 2, got 3}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<3x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: num_seqs + 1 starts (here num_seqs from block_tables).
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<3x?xi32>, %l: tensor<?xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op query_start_loc dimension 0 (sequences + 1) must be 4, got 3}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<3x?xi32>, tensor<?xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: the scale is finite.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op scale must be finite}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 0x7FC00000 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: one sink per query head.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'uq.paged_attention' op sinks dimension 0 (query heads) must be 4, got 2}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl sinks %s scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>, tensor<2xf32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: sinks are a vector.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>, %s: tensor<4x1xf32>) {
  // expected-error @+1 {{'uq.paged_attention' op sinks must have rank 1}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl sinks %s scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>, tensor<4x1xf32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: the result is [num_tokens, Hq, D].
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op result must have rank 3}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x512xf32>
  return
}

// -----

// paged_attention: the result has the query's shape.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op result dimension 2 (same as the query) must be 128, got 64}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x64xf32>
  return
}

// -----

// paged_attention: the window is at least one token.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi32>) {
  // expected-error @+1 {{'uq.paged_attention' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 window 0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<?x4x128xf32>
  return
}

// -----

// paged_attention: the index operands are i32.
func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<2x4xi32>, %l: tensor<2xi32>, %qsl: tensor<3xi64>) {
  // expected-error @+1 {{'uq.paged_attention' op operand #4 must be ranked tensor of 32-bit signless integer values, but got 'tensor<3xi64>'}}
  %o = uq.paged_attention %q, %cache, %bt, %l query_start_loc %qsl scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi64>) -> tensor<?x4x128xf32>
  return
}

// -----

func.func @f(%o: tensor<2x4x2x128xf32>, %m: tensor<2x4x2xf32>) {
  // expected-error @+1 {{'uq.merge_partitions' op max must have rank 3}}
  %r = uq.merge_partitions %o, %o, %o : (tensor<2x4x2x128xf32>, tensor<2x4x2x128xf32>, tensor<2x4x2x128xf32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%o: tensor<2x4x2x128xf32>, %m: tensor<2x4x2xf32>, %s: tensor<2x4x3xf32>) {
  // expected-error @+1 {{'uq.merge_partitions' op max and sum must have the same type}}
  %r = uq.merge_partitions %o, %m, %s : (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x3xf32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%o: tensor<2x4x2x128xf32>, %m: tensor<2x5x2xf32>) {
  // expected-error @+1 {{'uq.merge_partitions' op max dimension 1 (same as out) must be 4, got 5}}
  %r = uq.merge_partitions %o, %m, %m : (tensor<2x4x2x128xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%o: tensor<2x4x2x128xf32>, %m: tensor<2x4x2xf32>, %s: tensor<4x1xf32>) {
  // expected-error @+1 {{'uq.merge_partitions' op sinks must have rank 1}}
  %r = uq.merge_partitions %o, %m, %m sinks %s : (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>, tensor<4x1xf32>) -> tensor<2x4x128xf32>
  return
}

// -----

func.func @f(%o: tensor<2x4x2x128xf32>, %m: tensor<2x4x2xf32>) {
  // expected-error @+1 {{'uq.merge_partitions' op result dimension 2 (head dimension) must be 128, got 64}}
  %r = uq.merge_partitions %o, %m, %m : (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x64xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // Not an i8 tensor: caught by the declarative type constraint.
  // expected-error @+1 {{'uq.quantize' op result #1 must be ranked tensor of 8-bit signless integer values, but got 'tensor<4x2xf32>'}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x32xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @f(%k: tensor<3x2x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x2x136xi8>,
             %m: tensor<2x64xf32>) {
  // expected-error @+1 {{'uq.cache_write' op k_mean dimension 1 (head dimension) must be 128, got 64}}
  %c = uq.cache_write %k, %k, %s into %cache k_mean %m : tensor<2x64xf32> {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x2x128xf32>, tensor<3x2x128xf32>, tensor<3xi64> into tensor<8x16x2x136xi8>
  return
}

// -----

func.func @f(%k: tensor<3x2x128xf32>, %s: tensor<3xi64>, %cache: tensor<8x16x2x136xi8>,
             %m: tensor<128xf32>) {
  // expected-error @+1 {{'uq.cache_write' op v_mean must have rank 2, got 'tensor<128xf32>'}}
  %c = uq.cache_write %k, %k, %s into %cache v_mean %m : tensor<128xf32> {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x2x128xf32>, tensor<3x2x128xf32>, tensor<3xi64> into tensor<8x16x2x136xi8>
  return
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x2x136xi8>, %bt: tensor<1x8xi32>,
             %lens: tensor<1xi32>, %m: tensor<4x128xf32>) {
  // expected-error @+1 {{'uq.decode_attention' op v_mean dimension 0 (KV heads) must be 2, got 4}}
  %o = uq.decode_attention %q, %cache, %bt, %lens v_mean %m scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x2x136xi8>, tensor<1x8xi32>, tensor<1xi32>, tensor<4x128xf32>) -> tensor<1x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x2x136xi8>, %bt: tensor<1x8xi32>,
             %lens: tensor<1xi32>, %m: tensor<2x128xf16>) {
  // expected-error @+1 {{'uq.decode_attention_partial' op operand #4 must be ranked tensor of 32-bit float values, but got 'tensor<2x128xf16>'}}
  %o, %mx, %l = uq.decode_attention_partial %q, %cache, %bt, %lens k_mean %m scale 1.0 partition_size 64 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x2x136xi8>, tensor<1x8xi32>, tensor<1xi32>, tensor<2x128xf16>) -> (tensor<1x4x2x128xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
  return
}

// -----

func.func @f(%q: tensor<1x4x48xf32>, %cache: tensor<8x16x2x192xi8>, %bt: tensor<1x8xi32>,
             %lens: tensor<1xi32>) {
  // expected-error @+1 {{'uq.decode_attention' op query_precision fp8_e4m3_scaled needs a head dimension that is a multiple of 32 (one scale per 32 channels), got 48}}
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 1.0 {k_format = #uq.kv_format<bf16>, v_format = #uq.kv_format<bf16>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision fp8_e4m3_scaled>} : (tensor<1x4x48xf32>, tensor<8x16x2x192xi8>, tensor<1x8xi32>, tensor<1xi32>) -> tensor<1x4x48xf32>
  return
}

// -----

func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x2x136xi8>, %bt: tensor<?x8xi32>,
             %lens: tensor<?xi32>, %qsl: tensor<?xi32>, %m: tensor<1x128xf32>) {
  // expected-error @+1 {{'uq.paged_attention' op k_mean dimension 0 (KV heads) must be 2, got 1}}
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl k_mean %m scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x2x136xi8>, tensor<?x8xi32>, tensor<?xi32>, tensor<?xi32>, tensor<1x128xf32>) -> tensor<?x4x128xf32>
  return
}

// -----

func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x2x136xi8>, %bt: tensor<?x8xi32>,
             %lens: tensor<?xi32>, %qsl: tensor<?xi32>, %m: tensor<2x64xf32>) {
  // expected-error @+1 {{'uq.paged_attention' op v_mean dimension 1 (head dimension) must be 128, got 64}}
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl v_mean %m scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x2x136xi8>, tensor<?x8xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2x64xf32>) -> tensor<?x4x128xf32>
  return
}

// -----

// In the head-major layout the KV heads are dimension 1 of the cache.
func.func @head_major_heads(%k: tensor<4x2x128xf32>, %v: tensor<4x2x128xf32>,
                            %s: tensor<4xi64>, %c: tensor<8x16x2x136xi8>) -> tensor<8x16x2x136xi8> {
  // expected-error @+1 {{'uq.cache_write' op cache dimension 1 (KV heads) must be 2, got 16}}
  %r = uq.cache_write %k, %v, %s into %c
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<head_major>}
      : tensor<4x2x128xf32>, tensor<4x2x128xf32>, tensor<4xi64> into tensor<8x16x2x136xi8>
  return %r : tensor<8x16x2x136xi8>
}

// -----

func.func @head_major_attention(%q: tensor<1x8x128xbf16>, %c: tensor<8x16x2x136xi8>,
                                %bt: tensor<1x4xi32>, %lens: tensor<1xi32>) -> tensor<1x8x128xf32> {
  // expected-error @+1 {{'uq.decode_attention' op query heads (8) must be a multiple of KV heads (16)}}
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<head_major>}
      : (tensor<1x8x128xbf16>, tensor<8x16x2x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x8x128xf32>
  return %o : tensor<1x8x128xf32>
}
