# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s | FileCheck %s

# uq.run_pipeline with a pipeline that runs nothing, or with options the
# docs call invalid, is an error, not a success that returns the input:
# an empty (or blank) pipeline is a ValueError; prefill-waves=3 and a
# partition size past the 32-bit limit are CompileErrors with the pass's
# located diagnostic, also for a module without paged attention.

import uq

IR = """func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>) -> tensor<?x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x4x128xf32>
  return %o : tensor<?x4x128xf32>
}
"""


def attempt(name, call):
    try:
        call()
    except (ValueError, TypeError, uq.CompileError) as e:
        print(f"{name}: {type(e).__name__}: {str(e).strip()}")
        return
    raise AssertionError(f"{name}: expected an exception")


attempt("empty", lambda: uq.run_pipeline(IR, ""))
# CHECK: empty: ValueError: the pass pipeline is empty: name the passes, e.g. 'builtin.module(canonicalize)'
attempt("blank", lambda: uq.run_pipeline(IR, "  \n"))
# CHECK: blank: ValueError: the pass pipeline is empty
attempt("not a str", lambda: uq.run_pipeline(IR, None))
# CHECK: not a str: TypeError: pipeline must be a str, got NoneType
attempt("prefill-waves=3", lambda: uq.run_pipeline(
    IR, "builtin.module(convert-uq-to-wave{prefill-waves=3})"))
# CHECK: prefill-waves=3: CompileError: {{.*}}2:8: error: 'uq.decode_attention' op prefill-waves 3 is not supported (1, 2, 4 or 8 waves per workgroup
attempt("partition 2^32 + 32", lambda: uq.run_pipeline(
    IR, "builtin.module(convert-uq-to-wave{partition-size=4294967328})"))
# CHECK: partition 2^32 + 32: CompileError: {{.*}}error: 'uq.decode_attention' op partition size 4294967328 exceeds 2147483616 tokens
# A valid pipeline still runs.
out = uq.run_pipeline(IR, "builtin.module(convert-uq-to-wave{prefill-waves=2})")
print("valid:", "gpu.module @uq_kernels" in out)
# CHECK: valid: True
