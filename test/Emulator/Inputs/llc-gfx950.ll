; Kernels for llc-gfx950.test: what llc -mcpu=gfx950 emits for f16/bf16 stores
; of f32 values (v_cvt_f16_f32, v_cvt_pk_f16_f32, v_cvt_pk_bf16_f32), for fma
; with f16 sources or results (v_fma_mix_f32, v_fma_mixlo_f16,
; v_fma_mixhi_f16), and for the ds.read.tr{16,8,4}.b64 intrinsics.
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @st_f16(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr float, ptr addrspace(1) %in, i32 %id
  %v = load float, ptr addrspace(1) %p
  %h = fptrunc float %v to half
  %q = getelementptr half, ptr addrspace(1) %out, i32 %id
  store half %h, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @st_bf16(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr float, ptr addrspace(1) %in, i32 %id
  %v = load float, ptr addrspace(1) %p
  %h = fptrunc float %v to bfloat
  %q = getelementptr bfloat, ptr addrspace(1) %out, i32 %id
  store bfloat %h, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @st_bf16x2(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr <2 x float>, ptr addrspace(1) %in, i32 %id
  %v = load <2 x float>, ptr addrspace(1) %p
  %h = fptrunc <2 x float> %v to <2 x bfloat>
  %q = getelementptr <2 x bfloat>, ptr addrspace(1) %out, i32 %id
  store <2 x bfloat> %h, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @st_f16x2(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr <2 x float>, ptr addrspace(1) %in, i32 %id
  %v = load <2 x float>, ptr addrspace(1) %p
  %h = fptrunc <2 x float> %v to <2 x half>
  %q = getelementptr <2 x half>, ptr addrspace(1) %out, i32 %id
  store <2 x half> %h, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @fma_mix(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %c) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x half>, ptr addrspace(1) %a, i32 %id
  %va = load <2 x half>, ptr addrspace(1) %pa
  %pc = getelementptr float, ptr addrspace(1) %c, i32 %id
  %vc = load float, ptr addrspace(1) %pc
  %x = extractelement <2 x half> %va, i32 0
  %y = extractelement <2 x half> %va, i32 1
  %xf = fpext half %x to float
  %yf = fpext half %y to float
  %r = call float @llvm.fma.f32(float %xf, float %yf, float %vc)
  %q = getelementptr float, ptr addrspace(1) %out, i32 %id
  store float %r, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @fma_mixlo(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %c) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x half>, ptr addrspace(1) %a, i32 %id
  %va = load <2 x half>, ptr addrspace(1) %pa
  %pc = getelementptr float, ptr addrspace(1) %c, i32 %id
  %vc = load float, ptr addrspace(1) %pc
  %x = extractelement <2 x half> %va, i32 0
  %y = extractelement <2 x half> %va, i32 1
  %xf = fpext half %x to float
  %yf = fpext half %y to float
  %r = call float @llvm.fma.f32(float %xf, float %yf, float %vc)
  %rh = fptrunc float %r to half
  %q = getelementptr half, ptr addrspace(1) %out, i32 %id
  store half %rh, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @fma_mixpk(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %c) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x half>, ptr addrspace(1) %a, i32 %id
  %va = load <2 x half>, ptr addrspace(1) %pa
  %pc = getelementptr <2 x float>, ptr addrspace(1) %c, i32 %id
  %vc = load <2 x float>, ptr addrspace(1) %pc
  %x = extractelement <2 x half> %va, i32 0
  %y = extractelement <2 x half> %va, i32 1
  %xf = fpext half %x to float
  %yf = fpext half %y to float
  %c0 = extractelement <2 x float> %vc, i32 0
  %c1 = extractelement <2 x float> %vc, i32 1
  %r0 = call float @llvm.fma.f32(float %xf, float %yf, float %c0)
  %r1 = call float @llvm.fma.f32(float %yf, float %yf, float %c1)
  %h0 = fptrunc float %r0 to half
  %h1 = fptrunc float %r1 to half
  %v0 = insertelement <2 x half> poison, half %h0, i32 0
  %v1 = insertelement <2 x half> %v0, half %h1, i32 1
  %q = getelementptr <2 x half>, ptr addrspace(1) %out, i32 %id
  store <2 x half> %v1, ptr addrspace(1) %q
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)

@lds = internal addrspace(3) global [256 x i32] poison, align 16
define amdgpu_kernel void @tr(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr <2 x i32>, ptr addrspace(1) %in, i32 %id
  %v = load <2 x i32>, ptr addrspace(1) %p
  %l = getelementptr <2 x i32>, ptr addrspace(3) @lds, i32 %id
  store <2 x i32> %v, ptr addrspace(3) %l
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %a = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %l)
  %b = call <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3) %l)
  %c = call <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3) %l)
  %q = getelementptr <4 x i16>, ptr addrspace(1) %out, i32 %id
  store <4 x i16> %a, ptr addrspace(1) %q
  %q2 = getelementptr <2 x i32>, ptr addrspace(1) %q, i32 64
  store <2 x i32> %b, ptr addrspace(1) %q2
  %q3 = getelementptr <2 x i32>, ptr addrspace(1) %q, i32 128
  store <2 x i32> %c, ptr addrspace(1) %q3
  ret void
}
declare void @llvm.amdgcn.s.barrier()
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3))
