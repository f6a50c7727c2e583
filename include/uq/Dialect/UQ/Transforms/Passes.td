//===- Passes.td - Transformations of uq ops ---------------*- tablegen -*-===//

#ifndef UQ_DIALECT_UQ_TRANSFORMS_PASSES_TD
#define UQ_DIALECT_UQ_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def UQApplyPrecisionPolicyPass
    : Pass<"uq-apply-precision-policy", "::mlir::ModuleOp"> {
  let summary = "Set the KV formats of uq ops from a precision-policy JSON";
  let description = [{
    Reads a precision policy (`uq.precision-policy/1`, written by
    `uq-quality report`; schema in docs/precision-policy.md) and sets the
    `k_format`/`v_format` (and a quantize op's `format`, as a key format) of
    every uq op in the module to the policy's format for layer `layer`:

    | policy spec | K format | V format |
    | --- | --- | --- |
    | `uq` | `#uq.kv_format<fp4_e2m1, rotation = hadamard>` | `#uq.kv_format<fp4_e2m1>` |
    | `uq:c=X` / `ck=X` / `cv=X`, `norot`, `rotv`, `search`, `nearest_even` | the same with `c`, no rotation, `scale_rule = mse_search`, `rounding = nearest_even` | likewise; `rotv` rotates V |
    | `fp8` | `#uq.kv_format<fp8_e4m3>` | `#uq.kv_format<fp8_e4m3>` |
    | `bf16` | `#uq.kv_format<bf16>` | `#uq.kv_format<bf16>` |

    Decode attention over FP8/BF16 formats keeps its query in f32 (as the
    accuracy study measured them). A policy that gives one layer's KV heads
    different formats, a spec the dialect cannot express (`q=` other than
    `fp8`, `int4`, `lloydmax`) or an unreadable file is an error; so is a cache
    whose slots are too small for the new formats (the op verifier says how
    many bytes they need).

    ```mlir
    // uq-opt --uq-apply-precision-policy='policy=policy.json layer=1'
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"",
           "Path of the precision-policy JSON">,
    Option<"layer", "layer", "int64_t", /*default=*/"0",
           "Layer (from 0) whose formats the module's ops get">,
  ];
}

#endif // UQ_DIALECT_UQ_TRANSFORMS_PASSES_TD
