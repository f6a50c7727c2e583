// RUN: uq-opt %s --convert-uq-to-linalg --split-input-file | FileCheck %s
// RUN: uq-opt %s --convert-uq-to-linalg="rotation-arithmetic=butterfly-f32" --split-input-file | FileCheck %s --check-prefix=F32ROT

// The numerics these checks pin down are tested bit for bit against the
// reference library in test/unittests/Runtime; here: the shape of the IR.

// The rotation is the f64 butterfly (log2(64) = 6 stages of sum/difference
// on [N, D/2h, 2, h] views), one multiply by 1/sqrt(D) and one truncation;
// with butterfly-f32, f32 stages each divided by sqrt(2).
// CHECK-LABEL: func @rotate
// CHECK-SAME: %[[X:.*]]: tensor<3x5x64xbf16>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]]
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]] : tensor<15x64xbf16>) outs(%{{.*}} : tensor<15x64xf64>)
// CHECK-COUNT-6: arith.subf %{{.*}}, %{{.*}} : f64
// CHECK: arith.constant 1.250000e-01 : f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: tensor.expand_shape {{.*}} output_shape [3, 5, 64] : tensor<15x64xbf16> into tensor<3x5x64xbf16>
// CHECK-NOT: uq.
// F32ROT-LABEL: func @rotate
// F32ROT-NOT: f64
// F32ROT-COUNT-6: arith.divf %{{.*}}, %{{.*}} : f32
func.func @rotate(%x: tensor<3x5x64xbf16>) -> tensor<3x5x64xbf16> {
  %r = uq.rotate %x : tensor<3x5x64xbf16>
  return %r : tensor<3x5x64xbf16>
}

// -----

// FP4 quantize: absmax as an unsigned max of |x| bits per group of 32, the
// scale byte from the bits of float(c) * m (round up iff the mantissa is
// >= 0x3504F4 = 3474676, clamp to [-126, 127], sentinel for 0 / Inf / NaN),
// x * 2^-e, codes by one strict comparison per midpoint (ties down: the bits
// of a negative |x| are bumped by one ulp first), two per byte.
// CHECK-LABEL: func @quantize_fp4
// CHECK: %[[AMAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<4x4xi32>)
// CHECK: arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: arith.maxui
// CHECK: %[[BYTE:.*]] = linalg.generic {{.*}} ins(%[[AMAX]] : tensor<4x4xi32>)
// CHECK-DAG: arith.constant 2139095040 : i32
// CHECK-DAG: arith.constant 1.560000e-01 : f32
// CHECK-DAG: arith.constant 3474676 : i32
// CHECK-DAG: arith.constant -126 : i32
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[CODES:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[BYTE]] : tensor<4x4x16x2xf32>, tensor<4x4x16x2xf32>, tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4x16xi8>)
// CHECK: arith.constant 254 : i32
// CHECK: arith.mulf
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.cmpf ogt
// CHECK: arith.constant 5.000000e+00 : f32
// CHECK: tensor.collapse_shape %[[CODES]] {{\[}}[0], [1, 2]] : tensor<4x4x16xi8> into tensor<4x64xi8>
// CHECK-NOT: f4E2M1FN
// CHECK-NOT: scaling_truncf
func.func @quantize_fp4(%x: tensor<4x128xf32>) -> (tensor<4x64xi8>, tensor<4x4xi8>) {
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>}
      : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x4xi8>
  return %c, %s : tensor<4x64xi8>, tensor<4x4xi8>
}

// -----

// scale_rule = mse_search: after the log_round byte, the f64 squared error
// terms of the 3 candidates (byte - 1, byte, byte + 1 clamped to [1, 254]),
// the first pair of each group summed in the same generic, then log2(16) = 4
// stages adding adjacent partial sums (a binary tree in element order), a
// strict "<" over the candidates in order (ties keep the earlier), and the
// codes from the chosen byte.
// CHECK-LABEL: func @quantize_fp4_mse_search
// CHECK: %[[BYTE0:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4xi32>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[BYTE0]] : tensor<4x4x16x2xf32>, tensor<4x4x16x2xf32>, tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4x3x16xf64>)
// CHECK: linalg.index 2
// CHECK: arith.constant 254 : i32
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.subf %{{.*}}, %{{.*}} : f64
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: tensor.expand_shape %[[T]] {{\[}}[0], [1], [2], [3, 4]] output_shape [4, 4, 3, 8, 2] : tensor<4x4x3x16xf64> into tensor<4x4x3x8x2xf64>
// CHECK: outs(%{{.*}} : tensor<4x4x3x8xf64>)
// CHECK: outs(%{{.*}} : tensor<4x4x3x4xf64>)
// CHECK: outs(%{{.*}} : tensor<4x4x3x2xf64>)
// CHECK: %[[E:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x4x3x1xf64>)
// CHECK: %[[BYTE:.*]] = linalg.generic {{.*}} ins(%[[E]], %[[E]], %[[E]], %[[BYTE0]] : tensor<4x4x3x1xf64>, tensor<4x4x3x1xf64>, tensor<4x4x3x1xf64>, tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4xi32>)
// CHECK-COUNT-2: arith.cmpf olt
// CHECK: linalg.generic {{.*}} ins(%[[BYTE]] : tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4xi8>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[BYTE]] : tensor<4x4x16x2xf32>, tensor<4x4x16x2xf32>, tensor<4x4xi32>) outs(%{{.*}} : tensor<4x4x16xi8>)
func.func @quantize_fp4_mse_search(%x: tensor<4x128xf32>) -> (tensor<4x64xi8>, tensor<4x4xi8>) {
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, scale_rule = mse_search>}
      : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x4xi8>
  return %c, %s : tensor<4x64xi8>, tensor<4x4xi8>
}

// -----

// Dynamic leading dimensions are flattened, coded in tiles of at most 64
// rows and expanded back with their runtime sizes.
// CHECK-LABEL: func @quantize_dynamic
// CHECK-SAME: %[[X:.*]]: tensor<?x2x64xf32>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x2x64xf32> into tensor<?x64xf32>
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %{{.*}} step %[[C64:[^ ]*]] iter_args
// CHECK: %[[CNT:.*]] = arith.minsi %{{.*}}, %[[C64]]
// CHECK: tensor.extract_slice %[[ROWS]][%[[I]], 0] [%[[CNT]], 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[I]], 0] [%[[CNT]], 32] [1, 1] : tensor<?x32xi8> into tensor<?x32xi8>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x2x64xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [%[[N]], 2, 32] : tensor<?x32xi8> into tensor<?x2x32xi8>
func.func @quantize_dynamic(%x: tensor<?x2x64xf32>) -> (tensor<?x2x32xi8>, tensor<?x2x2xi8>) {
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>}
      : tensor<?x2x64xf32> -> tensor<?x2x32xi8>, tensor<?x2x2xi8>
  return %c, %s : tensor<?x2x32xi8>, tensor<?x2x2xi8>
}

// -----

// FP8 E4M3: integer RNE on the f32 bits (|x| > 464 = 0x43E80000 is NaN),
// subnormals by adding 2^14; bf16: RNE on the bits. No arith.truncf to an
// 8-bit or bf16 float type.
// CHECK-LABEL: func @quantize_fp8_bf16
// CHECK-DAG: arith.constant 1139277824 : i32
// CHECK-DAG: arith.constant 1.638400e+04 : f32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.constant 32767 : i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @quantize_fp8_bf16(%x: tensor<2x64xf32>) -> (tensor<2x64xi8>, tensor<2x64xbf16>) {
  %c = uq.quantize %x {format = #uq.kv_format<fp8_e4m3>} : tensor<2x64xf32> -> tensor<2x64xi8>
  %b = uq.quantize %x {format = #uq.kv_format<bf16>} : tensor<2x64xf32> -> tensor<2x64xbf16>
  return %c, %b : tensor<2x64xi8>, tensor<2x64xbf16>
}

// -----

// FP4 dequantize: nibble by linalg.index of the pair position, value times
// the UE8M0 scale (byte 0 -> 2^-127, 255 -> NaN).
// CHECK-LABEL: func @dequantize_fp4
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x4x16xi8>, tensor<4x4xi8>) outs(%{{.*}} : tensor<4x4x16x2xf32>)
// CHECK: linalg.index 3
// CHECK-DAG: arith.constant 4194304 : i32
// CHECK-DAG: arith.constant 2143289344 : i32
// CHECK: arith.mulf
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<4x4x16x2xf32> into tensor<4x128xf32>
func.func @dequantize_fp4(%c: tensor<4x64xi8>, %s: tensor<4x4xi8>) -> tensor<4x128xf32> {
  %d = uq.dequantize %c, %s {format = #uq.kv_format<fp4_e2m1>}
      : tensor<4x64xi8>, tensor<4x4xi8> -> tensor<4x128xf32>
  return %d : tensor<4x128xf32>
}

// -----

// Cache write: all rows coded first and assembled into slot rows (K codes
// at 0, K scales at 32, V codes at 34, V scales at 66 for D = 64, each
// copied by a generic into its window so bufferization writes in place),
// then an scf.for over tokens copies each slot row into the cache when
// 0 <= slot < num_blocks * block_size.
// CHECK-LABEL: func @cache_write
// CHECK-SAME: %[[SLOTS:[^:]*]]: tensor<3xi64>, %[[CACHE:[^:]*]]: tensor<4x16x2x68xi8>
// CHECK: %[[ROWS:.*]] = tensor.empty() : tensor<3x2x68xi8>
// CHECK: %[[W0:.*]] = tensor.extract_slice %[[ROWS]][0, 0, 0] [3, 2, 32] [1, 1, 1]
// CHECK: %[[C0:.*]] = linalg.generic {{.*}} outs(%[[W0]] : tensor<3x2x32xi8>)
// CHECK: %[[R0:.*]] = tensor.insert_slice %[[C0]] into %[[ROWS]][0, 0, 0] [3, 2, 32]
// CHECK: %[[R1:.*]] = tensor.insert_slice %{{.*}} into %[[R0]][0, 0, 32] [3, 2, 2]
// CHECK: %[[R2:.*]] = tensor.insert_slice %{{.*}} into %[[R1]][0, 0, 34] [3, 2, 32]
// CHECK: %[[R3:.*]] = tensor.insert_slice %{{.*}} into %[[R2]][0, 0, 66] [3, 2, 2]
// CHECK: %[[R:.*]] = scf.for %[[T:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[CACHE]]) -> (tensor<4x16x2x68xi8>)
// CHECK: %[[SLOT:.*]] = tensor.extract %[[SLOTS]][%[[T]]] : tensor<3xi64>
// CHECK-DAG: arith.cmpi slt, %[[SLOT]]
// CHECK-DAG: arith.cmpi sge, %[[SLOT]]
// CHECK: scf.if
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[R3]][%[[T]], 0, 0] [1, 2, 68] [1, 1, 1] : tensor<3x2x68xi8> to tensor<2x68xi8>
// CHECK: %[[WIN:.*]] = tensor.extract_slice %[[ACC]][%[[B:.*]], %[[O:.*]], 0, 0] [1, 1, 2, 68] [1, 1, 1, 1] : tensor<4x16x2x68xi8> to tensor<2x68xi8>
// CHECK: %[[CP:.*]] = linalg.generic {{.*}} ins(%[[ROW]] : tensor<2x68xi8>) outs(%[[WIN]] : tensor<2x68xi8>)
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[CP]] into %[[ACC]][%[[B]], %[[O]], 0, 0] [1, 1, 2, 68]
// CHECK: scf.yield %[[NEW]]
// CHECK: } else {
// CHECK: scf.yield %[[ACC]]
// CHECK: return %[[R]]
func.func @cache_write(%k: tensor<3x2x64xf32>, %v: tensor<3x2x64xf32>, %slots: tensor<3xi64>,
                       %cache: tensor<4x16x2x68xi8>) -> tensor<4x16x2x68xi8> {
  %r = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x64xf32>, tensor<3x2x64xf32>, tensor<3xi64> into tensor<4x16x2x68xi8>
  return %r : tensor<4x16x2x68xi8>
}

// -----

// Decode attention with GQA 4 and sinks: an scf.for over sequences; K and V
// decoded through the block table (ids clamped into the cache), logits as a
// reduction over D, max seeded by the sinks, exp, sum, PV as a reduction
// over tokens, zeros for an empty sequence.
// CHECK-LABEL: func @decode_attention
// CHECK-SAME: %[[BT:[^:]*]]: tensor<2x4xi32>, %[[LENS:[^:]*]]: tensor<2xi32>, %[[SINKS:[^:]*]]: tensor<8xf32>
// CHECK: %[[S4:.*]] = tensor.expand_shape %[[SINKS]] {{\[}}[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK: scf.for %[[S:[^ ]*]] = {{.*}} -> (tensor<2x8x64xf32>)
// CHECK: tensor.extract %[[LENS]][%[[S]]]
// CHECK: %[[K:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2x64xf32>)
// CHECK: tensor.extract %[[BT]][%[[S]], %{{.*}}] : tensor<2x4xi32>
// CHECK: %[[V:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2x64xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %[[K]] : tensor<2x4x64xf32>, tensor<?x2x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[S4]] : tensor<2x4xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %[[V]] : tensor<2x4x?xf32>, tensor<?x2x64xf32>)
// CHECK: tensor.insert_slice
func.func @decode_attention(%q: tensor<2x8x64xbf16>, %cache: tensor<9x16x2x68xi8>,
                            %bt: tensor<2x4xi32>, %lens: tensor<2xi32>,
                            %sinks: tensor<8xf32>) -> tensor<2x8x64xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens sinks %sinks scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x8x64xbf16>, tensor<9x16x2x68xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<8xf32>) -> tensor<2x8x64xf32>
  return %o : tensor<2x8x64xf32>
}

// -----

// Split-K: sequences, then partitions of 32 tokens clamped to the length;
// each partition's logits and values are slices; max/sum/out go to
// partition p. The merge is generics over [S, Hq, P(, D)].
// CHECK-LABEL: func @split_k
// CHECK: scf.for %[[S:[^ ]*]] = {{.*}} -> (tensor<1x4x2x64xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
// CHECK: scf.for %[[P:[^ ]*]] = {{.*}} -> (tensor<1x4x2x64xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
// CHECK: arith.minsi
// CHECK: tensor.extract_slice %{{.*}}[0, 0, %{{.*}}] [2, 2, %{{.*}}] [1, 1, 1] : tensor<2x2x?xf32> to tensor<2x2x?xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[S]], 0, %[[P]], 0] [1, 4, 1, 64]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[S]], 0, %[[P]]] [1, 4, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[S]], 0, %[[P]]] [1, 4, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<1x4xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<1x4x64xf32>)
// CHECK-NOT: uq.
func.func @split_k(%q: tensor<1x4x64xf32>, %cache: tensor<4x16x2x68xi8>,
                   %bt: tensor<1x4xi32>, %lens: tensor<1xi32>) -> tensor<1x4x64xf32> {
  %o, %m, %l = uq.decode_attention_partial %q, %cache, %bt, %lens
      scale 0.125 partition_size 32
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x4x64xf32>, tensor<4x16x2x68xi8>, tensor<1x4xi32>, tensor<1xi32>)
      -> (tensor<1x4x2x64xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
  %r = uq.merge_partitions %o, %m, %l
      : (tensor<1x4x2x64xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x64xf32>
  return %r : tensor<1x4x64xf32>
}

// -----

// Paged attention (run-time sizes): num_seqs is the smallest of the three
// per-sequence operands; the sequence loop carries the end of the previous
// sequence's tokens (the running maximum of query_start_loc, clamped to
// num_tokens); the context is decoded once per sequence through the block
// table (ids clamped into the cache); the token loop slices the keys
// [max(p + 1 - window, 0), p + 1) and runs decode's logits/softmax on them;
// the result starts as zeros (tokens no sequence covers).
// CHECK-LABEL: func @paged_attention
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<?x16x2x68xi8>, %[[BT:[^:]*]]: tensor<?x?xi32>, %[[LENS:[^:]*]]: tensor<?xi32>, %[[QSL:[^:]*]]: tensor<?xi32>, %[[SINKS:[^:]*]]: tensor<8xf32>
// CHECK: %[[NB:.*]] = tensor.dim %[[CACHE]], %{{.*}} : tensor<?x16x2x68xi8>
// CHECK: %[[NOBLK:.*]] = arith.cmpi eq, %[[NB]], %{{.*}} : index
// CHECK: %[[CAP:.*]] = arith.select %[[NOBLK]]
// CHECK: tensor.dim %[[QSL]]
// CHECK: tensor.dim %[[BT]]
// CHECK: arith.minsi
// CHECK: tensor.dim %[[LENS]]
// CHECK: %[[NSEQ:.*]] = arith.minsi
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x8x64xf32>)
// CHECK: scf.for %[[S:[^ ]*]] = %{{.*}} to %[[NSEQ]] step %{{.*}} iter_args(%[[OUT:[^ ]*]] = %[[ZEROS]], %[[PREV:[^ ]*]] = %{{.*}}) -> (tensor<?x8x64xf32>, index)
// CHECK: tensor.extract %[[QSL]][%[[S]]]
// CHECK: %[[B0:.*]] = arith.maxsi %{{.*}}, %[[PREV]] : index
// CHECK: %[[BEGIN:.*]] = arith.minsi %[[B0]]
// CHECK: tensor.extract %[[QSL]]
// CHECK: %[[E0:.*]] = arith.maxsi %{{.*}}, %[[BEGIN]] : index
// CHECK: %[[END:.*]] = arith.minsi %[[E0]]
// CHECK: tensor.extract %[[LENS]][%[[S]]]
// CHECK: arith.minsi %{{.*}}, %[[CAP]] : index
// CHECK: %[[K:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2x64xf32>)
// CHECK: tensor.extract %[[BT]][%[[S]], %{{.*}}] : tensor<?x?xi32>
// CHECK: %[[V:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2x64xf32>)
// CHECK: scf.for %[[T:[^ ]*]] = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%{{.*}} = %[[OUT]]) -> (tensor<?x8x64xf32>)
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: arith.subi %{{.*}}, %[[C32]] : index
// CHECK: %[[FIRST:.*]] = arith.maxsi
// CHECK: %[[N:.*]] = arith.maxsi
// CHECK: tensor.extract_slice %[[K]][%[[FIRST]], 0, 0] [%[[N]], 2, 64]
// CHECK: tensor.extract_slice %[[V]][%[[FIRST]], 0, 0] [%[[N]], 2, 64]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x64xf32>, tensor<?x2x64xf32>)
// CHECK: math.exp
// CHECK: tensor.insert_slice %{{.*}}[%[[T]], 0, 0] [1, 8, 64]
// CHECK: scf.yield %{{.*}}, %[[END]] : tensor<?x8x64xf32>, index
// CHECK-NOT: uq.
func.func @paged_attention(%q: tensor<?x8x64xbf16>, %cache: tensor<?x16x2x68xi8>,
                           %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                           %qsl: tensor<?xi32>, %sinks: tensor<8xf32>) -> tensor<?x8x64xf32> {
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl sinks %sinks
      scale 0.125 window 32
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x64xbf16>, tensor<?x16x2x68xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<8xf32>) -> tensor<?x8x64xf32>
  return %o : tensor<?x8x64xf32>
}
