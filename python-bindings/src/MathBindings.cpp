//===- MathBindings.cpp - float32 GEMM for uq.quality's model ------------===//
//
// Debian's numpy links the reference BLAS (a few GFLOP/s); the model forward
// pass of uq.quality is GEMM-bound, so this exposes Eigen's single-threaded
// GEMM as _uq.matmul when Eigen is available at build time.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <pybind11/numpy.h>

#ifdef UQ_HAVE_EIGEN
#include <Eigen/Core>
#endif

namespace py = pybind11;

namespace uq::python {

#ifdef UQ_HAVE_EIGEN
namespace {
using FArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

py::array_t<float> matmul(FArray a, FArray b) {
  if (a.ndim() != b.ndim() || (a.ndim() != 2 && a.ndim() != 3))
    throw py::value_error("matmul: both operands must be 2-D, or both 3-D "
                          "(batched), got ndim " + std::to_string(a.ndim()) +
                          " and " + std::to_string(b.ndim()));
  bool batched = a.ndim() == 3;
  py::ssize_t B = batched ? a.shape(0) : 1;
  if (batched && b.shape(0) != B)
    throw py::value_error("matmul: batch sizes differ");
  int ax = batched ? 1 : 0;
  py::ssize_t M = a.shape(ax), K = a.shape(ax + 1), N = b.shape(ax + 1);
  if (b.shape(ax) != K)
    throw py::value_error("matmul: inner dimensions differ (" +
                          std::to_string(K) + " vs " +
                          std::to_string(b.shape(ax)) + ")");
  std::vector<py::ssize_t> shape;
  if (batched)
    shape = {B, M, N};
  else
    shape = {M, N};
  py::array_t<float> c(shape);
  const float *pa = a.data();
  const float *pb = b.data();
  float *pc = c.mutable_data();
  {
    py::gil_scoped_release release;
    for (py::ssize_t i = 0; i < B; ++i) {
      Eigen::Map<const RowMat> A(pa + i * M * K, M, K);
      Eigen::Map<const RowMat> Bm(pb + i * K * N, K, N);
      Eigen::Map<RowMat> C(pc + i * M * N, M, N);
      C.noalias() = A * Bm;
    }
  }
  return c;
}
} // namespace
#endif

void populateMathBindings(py::module_ &m) {
#ifdef UQ_HAVE_EIGEN
  m.def("matmul", &matmul, py::arg("a"), py::arg("b"),
        "float32 a @ b (2-D, or 3-D batched), Eigen GEMM, one thread.");
#else
  (void)m;
#endif
}

} // namespace uq::python
