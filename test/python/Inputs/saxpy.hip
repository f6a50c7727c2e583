// y = a * x + y over n elements; compiled without HIP headers for
// test/python/emulate.py.
#define __global__ __attribute__((global))

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}
