//===- NpyTest.cpp - The .npy reader/writer and argument checks -----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/Npy.h"

#include "TestUtil.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

using namespace uq;
using namespace uq::runtime;
using namespace uq::test;

namespace {
/// A hand-written version 1.0 .npy file (the layout numpy.save writes).
std::string npyV1(const std::string &dict, const std::string &payload) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(header.size() & 0xFF);
  s += static_cast<char>(header.size() >> 8);
  return s + header + payload;
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }
} // namespace

// A numpy-style file parses to its dtype, shape and bytes; serialising it
// again gives the same array.
TEST(Npy, ParseAndRoundTrip) {
  std::string payload(2 * 3 * 2, '\0');
  for (size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i);
  auto a = parseNpy(npyV1("{'descr': '<u2', 'fortran_order': False, "
                          "'shape': (2, 3), }",
                          payload),
                    "t.npy");
  ASSERT_TRUE(static_cast<bool>(a)) << errorOf(a.takeError());
  EXPECT_EQ(a->descr, "<u2");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::string(a->data.begin(), a->data.end()), payload);
  auto b = parseNpy(serializeNpy(*a), "again");
  ASSERT_TRUE(static_cast<bool>(b)) << errorOf(b.takeError());
  EXPECT_EQ(b->descr, a->descr);
  EXPECT_EQ(b->shape, a->shape);
  EXPECT_EQ(b->data, a->data);
  // A 0-d array and a 1-d one.
  auto s = parseNpy(npyV1("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (), }",
                          std::string(4, '\0')),
                    "s.npy");
  ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
  EXPECT_TRUE(s->shape.empty());
}

// Truncated data, bad magic, Fortran order and big-endian data are errors
// that name the file.
TEST(Npy, MalformedFilesAreErrors) {
  auto check = [](const std::string &bytes, const std::string &what) {
    auto a = parseNpy(bytes, "bad.npy");
    ASSERT_FALSE(static_cast<bool>(a));
    std::string msg = errorOf(a.takeError());
    EXPECT_NE(msg.find("bad.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  check("hello", "magic");
  check(npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
              std::string(8, '\0')),
        "expected 12 data bytes");
  check(npyV1("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
              std::string(4, '\0')),
        "Fortran");
  check(npyV1("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
              std::string(4, '\0')),
        "big-endian");
  check(npyV1("{'descr': '<f4', 'fortran_order': False}", ""), "shape");
}

// Dtype and shape checks name the argument; bf16 wants uint16, i8 takes
// uint8 or int8, dynamic dimensions take any size, f4 is packed.
TEST(Npy, TensorConversionChecks) {
  TensorSpec bf16{"argument 1", "tensor<2x4xbf16>", DType::BF16, {2, 4}};
  NpyArray f32{"<f4", {2, 4}, std::vector<uint8_t>(32)};
  auto e = npyToTensor(f32, bf16, "q.npy");
  ASSERT_FALSE(static_cast<bool>(e));
  std::string msg = errorOf(e.takeError());
  EXPECT_NE(msg.find("argument 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("uint16"), std::string::npos) << msg;

  NpyArray u16{"<u2", {2, 5}, std::vector<uint8_t>(20)};
  e = npyToTensor(u16, bf16, "q.npy");
  ASSERT_FALSE(static_cast<bool>(e));
  msg = errorOf(e.takeError());
  EXPECT_NE(msg.find("shape (2, 5)"), std::string::npos) << msg;

  TensorSpec i8{"argument 0", "tensor<?x3xi8>", DType::I8,
                {mlir::ShapedType::kDynamic, 3}};
  for (const char *d : {"|u1", "|i1"}) {
    NpyArray a{d, {7, 3}, std::vector<uint8_t>(21, 5)};
    auto t = npyToTensor(a, i8, "c.npy");
    ASSERT_TRUE(static_cast<bool>(t)) << errorOf(t.takeError());
    EXPECT_EQ(t->shape, (std::vector<int64_t>{7, 3}));
  }

  TensorSpec f4{"argument 0", "tensor<2x4xf4E2M1FN>", DType::F4, {2, 4}};
  NpyArray packed{"|u1", {2, 2}, {0x21, 0x43, 0x65, 0x87}};
  auto t = npyToTensor(packed, f4, "f4.npy");
  ASSERT_TRUE(static_cast<bool>(t)) << errorOf(t.takeError());
  EXPECT_EQ(t->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(tensorToNpy(*t).data, packed.data);
}

// CPUProgram reports an unknown entry, a wrong argument count and a
// mismatching argument, each by name, and runs a function twice.
TEST(CPUProgramErrors, EntryAndArgumentErrors) {
  const char *ir = R"(
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %r = uq.rotate %x : tensor<2x64xf32>
  return %r : tensor<2x64xf32>
}
)";
  auto missing = CPUProgram::compile(ir, "nope");
  ASSERT_FALSE(static_cast<bool>(missing));
  std::string msg = errorOf(missing.takeError());
  EXPECT_NE(msg.find("no function @nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("@f, @g"), std::string::npos) << msg;

  auto bad = CPUProgram::compile("func.func @f(", "f");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError()).find("cannot parse"), std::string::npos);

  auto g = CPUProgram::compile(ir, "g");
  ASSERT_TRUE(static_cast<bool>(g)) << errorOf(g.takeError());
  std::vector<HostTensor> none;
  auto r = (*g)->run(none);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(errorOf(r.takeError()).find("takes 1 argument"),
            std::string::npos);
  std::vector<HostTensor> wrong = {HostTensor::zeros(DType::F32, {3, 64})};
  r = (*g)->run(wrong);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(errorOf(r.takeError()).find("argument 0"), std::string::npos);

  // Returning an argument (the buffer aliases the input) works twice.
  auto f = CPUProgram::compile(ir, "f");
  ASSERT_TRUE(static_cast<bool>(f)) << errorOf(f.takeError());
  for (int i = 0; i < 2; ++i) {
    std::vector<HostTensor> args = {
        f32Tensor({4}, {1.0f, 2.0f, 3.0f, float(i)})};
    auto out = (*f)->run(args);
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    EXPECT_EQ(valuesOf<float>((*out)[0]),
              (std::vector<float>{1.0f, 2.0f, 3.0f, float(i)}));
  }
}
