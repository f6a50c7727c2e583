// HIP kernels for hip.test, compiled without HIP headers.
#define __global__ __attribute__((global))
typedef int v8i __attribute__((ext_vector_type(8)));
typedef float v4f __attribute__((ext_vector_type(4)));

static __attribute__((device)) unsigned tid() {
  return __builtin_amdgcn_workitem_id_x();
}

extern "C" __global__ void vadd(const float *a, const float *b, float *c,
                                int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + tid();
  if (i < n)
    c[i] = a[i] + b[i];
}

// D = sum over iterations t of scaled_mfma(A_t (FP8), B_t (FP8), scales_t).
// a: iters x 64 lanes x 32 bytes, b: same, s: iters x 2 x 64 dwords.
extern "C" __global__ void mfma_loop(const v8i *a, const v8i *b,
                                     const int *s, v4f *d, int iters) {
  unsigned l = tid();
  v4f acc = {0, 0, 0, 0};
  for (int t = 0; t < iters; ++t) {
    v8i A = a[t * 64 + l], B = b[t * 64 + l];
    int sa = s[t * 128 + l], sb = s[t * 128 + 64 + l];
    acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A, B, acc, 0, 0,
                                                          2, sa, 1, sb);
  }
  d[l] = acc;
}
