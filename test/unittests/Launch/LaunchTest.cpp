//===- LaunchTest.cpp - The launch runtime on the emulator and HIP --------===//
//
// One program with run-time sizes (uq.cache_write, uq.decode_attention,
// uq.paged_attention; GQA 4, head_dim 64, blocks of 16, partitions of 64
// tokens) compiled once, then run through uq::launch::Program:
//  - on the emulator device, against the reference library (cache bytes
//    bit-exact, every output inside ref::attentionErrorBounds' bound);
//  - on the HIP device over the stand-in libamdhip64.so, bit-identical to
//    the emulator device (the HIP device's dlopen, module, memory and
//    launch code is what runs);
//  - every bad input an error naming the operand, before the device is
//    touched.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/Launch.h"

#include "uq/Reference/Reference.h"
#include "uq/Target/Compiler.h"

#include "../AttentionBound.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <dlfcn.h>

#include <numeric>
#include <random>

using namespace uq;
using namespace uq::launch;

namespace {

constexpr int64_t kHq = 8, kHkv = 2, kD = 64, kBs = 16;
constexpr float kScale = 0.125f;

std::string programIR(int64_t slot) {
  std::string attrs =
      "{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
      "v_format = #uq.kv_format<fp4_e2m1>, layout = "
      "#uq.cache_layout<vllm_slot>}";
  std::string kv = "tensor<?x2x64xbf16>", cache =
                                               "tensor<?x16x2x" +
                                               std::to_string(slot) + "xi8>";
  std::string q = "tensor<?x8x64xbf16>", out = "tensor<?x8x64xf32>";
  std::string bt = "tensor<?x?xi32>", lens = "tensor<?xi32>";
  return "func.func @write(%k: " + kv + ", %v: " + kv +
         ", %s: tensor<?xi64>, %c: " + cache + ") -> " + cache +
         " {\n  %r = uq.cache_write %k, %v, %s into %c " + attrs + " : " +
         kv + ", " + kv + ", tensor<?xi64> into " + cache +
         "\n  return %r : " + cache + "\n}\n" +
         "func.func @decode(%q: " + q + ", %c: " + cache + ", %bt: " + bt +
         ", %lens: " + lens + ") -> " + out +
         " {\n  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.125 " +
         attrs + " : (" + q + ", " + cache + ", " + bt + ", " + lens +
         ") -> " + out + "\n  return %o : " + out + "\n}\n" +
         "func.func @paged(%q: " + q + ", %c: " + cache + ", %bt: " + bt +
         ", %lens: " + lens + ", %qsl: " + lens + ") -> " + out +
         " {\n  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc "
         "%qsl scale 0.125 " +
         attrs + " : (" + q + ", " + cache + ", " + bt + ", " + lens + ", " +
         lens + ") -> " + out + "\n  return %o : " + out + "\n}\n";
}

struct Compiled {
  std::string hsaco, json;
  int64_t slot = 0;
};

const Compiled &compiled() {
  static Compiled c = [] {
    Compiled r;
    r.slot = ref::slotBytes(ref::keyFormat(), ref::valueFormat(), kD);
    CompileOptions opts;
    opts.partitionSize = 64;
    auto res = compileSource(programIR(r.slot), "launch-test", opts);
    if (!res) {
      ADD_FAILURE() << llvm::toString(res.takeError());
      return r;
    }
    r.hsaco = res->output;
    r.json = res->kernelsJson;
    return r;
  }();
  return c;
}

llvm::ArrayRef<uint8_t> bytes(const std::string &s) {
  return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

std::unique_ptr<Program> loadProgram(std::unique_ptr<Device> dev = nullptr) {
  const Compiled &c = compiled();
  auto p = Program::load(bytes(c.hsaco), c.json, std::move(dev));
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::move(*p);
}

std::unique_ptr<Device> hipStandIn() {
  auto d = createHipDevice(UQ_HIP_STANDIN);
  if (!d) {
    ADD_FAILURE() << llvm::toString(d.takeError());
    return nullptr;
  }
  return std::move(*d);
}

/// The stand-in library, loaded (and kept loaded: the HIP device's
/// dlclose must not drop its counters) by the test.
struct StandIn {
  void *handle = dlopen(UQ_HIP_STANDIN, RTLD_NOW | RTLD_LOCAL);
  ~StandIn() {
    if (handle)
      dlclose(handle);
  }
  /// uqHipStandInCalls: calls of one entry point so far.
  long calls(const char *entry) const {
    auto fn = reinterpret_cast<long (*)(const char *)>(
        dlsym(handle, "uqHipStandInCalls"));
    return fn ? fn(entry) : -1;
  }
  /// uqHipStandInLiveAllocations.
  long live() const {
    auto fn = reinterpret_cast<long (*)()>(
        dlsym(handle, "uqHipStandInLiveAllocations"));
    return fn ? fn() : -1;
  }
};

/// Random bf16 values (bit patterns) and the floats they are.
std::pair<std::vector<uint16_t>, std::vector<float>>
randomBf16(std::mt19937_64 &rng, size_t n) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> bits(n);
  std::vector<float> vals(n);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = ref::floatToBf16(dist(rng));
    vals[i] = ref::bf16ToFloat(bits[i]);
  }
  return {bits, vals};
}

/// A paged batch: tokens of each sequence written to shuffled blocks.
struct Batch {
  std::vector<int32_t> lens;
  int64_t numBlocks = 0, maxBlocks = 0;
  std::vector<int32_t> tables;
  std::vector<int64_t> slots;
  std::vector<float> k, v;
  Array key, value, slotMapping, emptyCache, blockTables, seqLens;

  Batch(std::vector<int32_t> l, uint64_t seed) : lens(std::move(l)) {
    std::mt19937_64 rng(seed);
    int64_t used = 0;
    for (int32_t n : lens) {
      maxBlocks = std::max<int64_t>(maxBlocks, (n + kBs - 1) / kBs);
      used += (n + kBs - 1) / kBs;
    }
    maxBlocks += 1; // an unused column
    numBlocks = used + 2;
    std::vector<int32_t> pool(numBlocks);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    tables.assign(lens.size() * maxBlocks, -1); // unused: -1, never read
    size_t next = 0;
    for (size_t s = 0; s < lens.size(); ++s) {
      for (int64_t b = 0; b < (lens[s] + kBs - 1) / kBs; ++b)
        tables[s * maxBlocks + b] = pool[next++];
      for (int32_t j = 0; j < lens[s]; ++j)
        slots.push_back(int64_t(tables[s * maxBlocks + j / kBs]) * kBs +
                        j % kBs);
    }
    slots.push_back(-1); // padding: skipped
    int64_t tokens = slots.size();
    auto [kb, kf] = randomBf16(rng, tokens * kHkv * kD);
    auto [vb, vf] = randomBf16(rng, tokens * kHkv * kD);
    k = kf;
    v = vf;
    key = Array::of("bf16", {tokens, kHkv, kD}, kb);
    value = Array::of("bf16", {tokens, kHkv, kD}, vb);
    slotMapping = Array::of("i64", {tokens}, slots);
    emptyCache = Array::of(
        "u8", {numBlocks, kBs, kHkv, compiled().slot},
        std::vector<uint8_t>(numBlocks * kBs * kHkv * compiled().slot, 0));
    blockTables = Array::of("i32", {int64_t(lens.size()), maxBlocks}, tables);
    seqLens = Array::of("i32", {int64_t(lens.size())}, lens);
  }

  ref::CacheGeometry geometry() const {
    return {numBlocks, kBs, kHkv, kD, compiled().slot};
  }
  /// The reference's cache: the tokens with a slot.
  std::vector<uint8_t> referenceCache() const {
    std::vector<uint8_t> c(ref::cacheBytes(geometry()), 0);
    int64_t n = int64_t(slots.size()) - 1;
    ref::Status st = ref::cacheWrite(ref::keyFormat(), ref::valueFormat(),
                                     geometry(), k.data(), v.data(),
                                     slots.data(), n, c.data());
    EXPECT_TRUE(st.ok()) << st.message();
    return c;
  }
};

/// Outputs outside the reference's bound for query [tokens, Hq, D] over
/// sequences owning query_start_loc ranges.
int64_t outsideReference(const Batch &b, const std::vector<uint8_t> &cache,
                         const std::vector<float> &q, int64_t tokens,
                         const std::vector<int32_t> &qsl,
                         const std::vector<float> &got,
                         const float *sinks = nullptr) {
  ref::AttentionParams p;
  p.softmaxScale = kScale;
  std::vector<float> want(tokens * kHq * kD);
  std::vector<double> bound(want.size());
  int64_t seqs = b.lens.size();
  ref::Status st = ref::pagedAttention(
      ref::keyFormat(), ref::valueFormat(), b.geometry(), cache.data(), p, 0,
      q.data(), tokens, kHq, qsl.data(), seqs, b.tables.data(), b.maxBlocks,
      b.lens.data(), sinks, want.data());
  EXPECT_TRUE(st.ok()) << st.message();
  st = ref::attentionErrorBounds(
      ref::keyFormat(), ref::valueFormat(), b.geometry(), cache.data(), p, 0,
      q.data(), tokens, kHq, qsl.data(), seqs, b.tables.data(), b.maxBlocks,
      b.lens.data(), sinks, test::probabilityError(ref::valueFormat()),
      bound.data());
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size())
    return -1;
  return test::countOutside(got, want, bound);
}

TEST(LaunchProgram, DescribesTheOps) {
  auto prog = loadProgram();
  ASSERT_TRUE(prog);
  ASSERT_EQ(prog->ops().size(), 3u);
  const OpInfo &w = prog->ops()[0], &d = prog->ops()[1], &p = prog->ops()[2];
  EXPECT_EQ(w.name, "write_0");
  EXPECT_EQ(w.kind, OpKind::CacheWrite);
  EXPECT_EQ(d.kind, OpKind::DecodeAttention);
  // In launch order; the single-pass kernel replaces the partial and merge
  // kernels when the launch has one partition.
  EXPECT_EQ(d.kernels, (std::vector<std::string>{
                           "decode_0_query", "decode_0_partial",
                           "decode_0_single", "decode_0_merge"}));
  EXPECT_EQ(p.kind, OpKind::PagedAttention);
  auto names = [](const std::vector<BufferInfo> &bs) {
    std::vector<std::string> n;
    for (const BufferInfo &b : bs)
      n.push_back(b.name);
    return n;
  };
  EXPECT_EQ(names(w.inputs), (std::vector<std::string>{
                                 "key", "value", "slot_mapping", "cache"}));
  EXPECT_EQ(names(w.outputs), (std::vector<std::string>{"cache"}));
  EXPECT_EQ(names(d.inputs),
            (std::vector<std::string>{"query", "cache", "block_tables",
                                      "seq_lens"}));
  EXPECT_EQ(names(d.workspaces),
            (std::vector<std::string>{"query_prepared", "partial_out",
                                      "partial_max", "partial_sum"}));
  EXPECT_EQ(names(d.outputs), (std::vector<std::string>{"out"}));
  EXPECT_EQ(names(p.inputs),
            (std::vector<std::string>{"query", "cache", "block_tables",
                                      "seq_lens", "query_start_loc"}));
  // Lookup by kind and by name.
  auto byKind = prog->findOp("uq.paged_attention");
  ASSERT_TRUE(static_cast<bool>(byKind)) << llvm::toString(byKind.takeError());
  EXPECT_EQ((*byKind)->name, "paged_0");
  auto none = prog->findOp("merge_partitions");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("has no op"),
            std::string::npos);
}

TEST(LaunchProgram, PlansSizesAndPartitions) {
  auto prog = loadProgram();
  ASSERT_TRUE(prog);
  Batch b({40, 0, 100}, 3);
  auto [qb, qf] = [] {
    std::mt19937_64 rng(9);
    return randomBf16(rng, 3 * kHq * kD);
  }();
  Array q = Array::of("bf16", {3, kHq, kD}, qb);
  auto sizes = prog->plan("decode_attention",
                          {{"query", &q},
                           {"cache", &b.emptyCache},
                           {"block_tables", &b.blockTables},
                           {"seq_lens", &b.seqLens}});
  ASSERT_TRUE(static_cast<bool>(sizes)) << llvm::toString(sizes.takeError());
  EXPECT_EQ((*sizes)["num_seqs"], 3);
  EXPECT_EQ((*sizes)["num_blocks"], b.numBlocks);
  EXPECT_EQ((*sizes)["max_blocks"], b.maxBlocks);
  // The partition rule: max_blocks = ceil(100 / 16) + 1 = 8 columns of 16
  // tokens, C = 128; the grid of 3 sequences x 2 KV heads is far below the
  // 1024 workgroups the rule aims at, so partitions shrink to the fewest
  // tokens, 64: 2.
  EXPECT_EQ(b.maxBlocks, 8);
  EXPECT_EQ((*sizes)["num_partitions"], 2);
  RunOptions o;
  o.sizes["num_partitions"] = 5;
  auto given = prog->plan("decode_0",
                          {{"query", &q},
                           {"cache", &b.emptyCache},
                           {"block_tables", &b.blockTables},
                           {"seq_lens", &b.seqLens}},
                          o);
  ASSERT_TRUE(static_cast<bool>(given)) << llvm::toString(given.takeError());
  EXPECT_EQ((*given)["num_partitions"], 5);
}

/// Cache write, decode and paged attention on \p dev; outputs returned for
/// the bit-identity check.
struct Outputs {
  Array cache, decode, paged;
};

Outputs runAll(std::unique_ptr<Device> dev, bool checkReference,
               int64_t partitions = 0) {
  Outputs o;
  auto prog = loadProgram(std::move(dev));
  if (!prog)
    return o;
  Batch b({40, 0, 100, 17}, 5);
  RunOptions opts;
  if (partitions)
    opts.sizes["num_partitions"] = partitions;
  auto cache = prog->cacheWrite(b.key, b.value, b.slotMapping, b.emptyCache);
  if (!cache) {
    ADD_FAILURE() << llvm::toString(cache.takeError());
    return o;
  }
  o.cache = *cache;
  std::vector<uint8_t> refCache = b.referenceCache();
  if (checkReference) {
    EXPECT_EQ(cache->shape, b.emptyCache.shape);
    EXPECT_TRUE(cache->bytes == refCache)
        << "the cache-write kernel's bytes differ from ref::cacheWrite";
  }
  // Decode: one query token per sequence.
  std::mt19937_64 rng(11);
  int64_t seqs = b.lens.size();
  auto [qb, qf] = randomBf16(rng, seqs * kHq * kD);
  Array q = Array::of("bf16", {seqs, kHq, kD}, qb);
  auto out = prog->decodeAttention(q, *cache, b.blockTables, b.seqLens,
                                   nullptr, {}, "", opts);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return o;
  }
  o.decode = *out;
  EXPECT_EQ(out->dtype, "f32");
  EXPECT_EQ(out->shape, (std::vector<int64_t>{seqs, kHq, kD}));
  std::vector<int32_t> qslDecode(seqs + 1);
  std::iota(qslDecode.begin(), qslDecode.end(), 0);
  if (checkReference) {
    std::vector<float> got = out->values<float>();
    EXPECT_EQ(outsideReference(b, cache->bytes, qf, seqs, qslDecode, got),
              0);
    // The comparison can fail: the outputs are not trivial, and those of
    // another query are far outside the bound.
    float largest = 0;
    for (float x : got)
      largest = std::max(largest, std::fabs(x));
    EXPECT_GT(largest, 0.1f);
    std::vector<float> otherQ(qf.rbegin(), qf.rend());
    EXPECT_GT(outsideReference(b, cache->bytes, otherQ, seqs, qslDecode, got),
              int64_t(got.size()) / 2);
  }
  // Paged: the last 8, 0, 30 and 1 tokens of the sequences are new
  // (a chunk of a prefill, a decode), 39 query tokens.
  std::vector<int32_t> qsl = {0, 8, 8, 38, 39};
  int64_t tokens = qsl.back();
  auto [pb, pf] = randomBf16(rng, tokens * kHq * kD);
  Array pq = Array::of("bf16", {tokens, kHq, kD}, pb);
  Array qslArr = Array::of("i32", {seqs + 1}, qsl);
  auto paged = prog->pagedAttention(pq, *cache, b.blockTables, b.seqLens,
                                    qslArr, nullptr, {}, "", opts);
  if (!paged) {
    ADD_FAILURE() << llvm::toString(paged.takeError());
    return o;
  }
  o.paged = *paged;
  EXPECT_EQ(paged->shape, (std::vector<int64_t>{tokens, kHq, kD}));
  if (checkReference) {
    EXPECT_EQ(outsideReference(b, cache->bytes, pf, tokens, qsl,
                               paged->values<float>()),
              0);
  }
  return o;
}

TEST(LaunchProgram, EmulatorMatchesTheReference) {
  Outputs o = runAll(createEmulatorDevice(), /*checkReference=*/true);
  EXPECT_FALSE(o.paged.bytes.empty());
}

TEST(LaunchProgram, OnePartitionMatchesTheReference) {
  Outputs o = runAll(createEmulatorDevice(), /*checkReference=*/true, 1);
  EXPECT_FALSE(o.paged.bytes.empty());
}

TEST(LaunchProgram, HipStandInIsBitIdenticalToTheEmulator) {
  StandIn standIn;
  ASSERT_TRUE(standIn.handle) << dlerror();
  long launches = standIn.calls("hipModuleLaunchKernel");
  long syncs = standIn.calls("hipStreamSynchronize");
  auto dev = hipStandIn();
  ASSERT_TRUE(dev);
  EXPECT_NE(dev->name().find("hip-standin/libamdhip64.so"),
            std::string::npos)
      << dev->name();
  Outputs hip = runAll(std::move(dev), /*checkReference=*/true);
  Outputs emu = runAll(createEmulatorDevice(), /*checkReference=*/false);
  ASSERT_FALSE(emu.decode.bytes.empty());
  EXPECT_TRUE(hip.cache.bytes == emu.cache.bytes);
  EXPECT_TRUE(hip.decode.bytes == emu.decode.bytes);
  EXPECT_TRUE(hip.paged.bytes == emu.paged.bytes);
  // Every launch went through the stand-in: 1 cache write, 3 decode and
  // 3 paged kernels, one synchronization per op; nothing left allocated.
  EXPECT_EQ(standIn.calls("hipModuleLaunchKernel") - launches, 7);
  EXPECT_EQ(standIn.calls("hipStreamSynchronize") - syncs, 3);
  EXPECT_EQ(standIn.live(), 0);
}

TEST(LaunchProgram, OnePartitionLaunchesTheSinglePassKernel) {
  StandIn standIn;
  ASSERT_TRUE(standIn.handle) << dlerror();
  long launches = standIn.calls("hipModuleLaunchKernel");
  auto dev = hipStandIn();
  ASSERT_TRUE(dev);
  Outputs one = runAll(std::move(dev), /*checkReference=*/true, 1);
  ASSERT_FALSE(one.decode.bytes.empty());
  // 1 cache write, 2 decode kernels (query, single pass: no partial, no
  // merge) and 3 paged kernels.
  EXPECT_EQ(standIn.calls("hipModuleLaunchKernel") - launches, 6);
  EXPECT_EQ(standIn.live(), 0);
}

TEST(LaunchProgram, HipLibraryErrors) {
  auto missing = createHipDevice("/nonexistent/libamdhip64.so");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("cannot load the HIP runtime '/nonexistent/"
                      "libamdhip64.so'"),
            std::string::npos);
  // A library without the entry points (libm).
  auto wrong = createHipDevice("libm.so.6");
  ASSERT_FALSE(static_cast<bool>(wrong));
  EXPECT_NE(llvm::toString(wrong.takeError()).find("has no hipModuleLoadData"),
            std::string::npos);
}

/// The message of a failed plan/run (and that it is a usage error).
std::string errorOf(llvm::Error e) {
  bool usage = false;
  std::string m = emu::errorMessage(std::move(e), usage);
  EXPECT_TRUE(usage) << m;
  return m;
}

TEST(LaunchProgram, BadInputNamesTheOperand) {
  auto prog = loadProgram();
  ASSERT_TRUE(prog);
  Batch b({40, 20}, 7);
  std::mt19937_64 rng(1);
  Array q = Array::of("bf16", {2, kHq, kD}, randomBf16(rng, 2 * kHq * kD).first);
  Operands ok = {{"query", &q},
                 {"cache", &b.emptyCache},
                 {"block_tables", &b.blockTables},
                 {"seq_lens", &b.seqLens}};
  ASSERT_TRUE(static_cast<bool>(prog->plan("decode_attention", ok)));
  auto expectError = [&](Operands ops, const std::string &want,
                         RunOptions opts = {}) {
    auto r = prog->run("decode_attention", ops, opts);
    ASSERT_FALSE(static_cast<bool>(r)) << want;
    std::string m = errorOf(r.takeError());
    EXPECT_NE(m.find(want), std::string::npos) << m;
  };
  // dtype
  Array qf32 = Array::of("f32", {2, kHq, kD},
                         std::vector<float>(2 * kHq * kD, 0.f));
  Operands o = ok;
  o["query"] = &qf32;
  expectError(o, "operand 'query' must be bf16, not f32");
  // rank, compiled-in extent
  Array q2d = Array::of("bf16", {2, kHq * kD},
                        std::vector<uint16_t>(2 * kHq * kD, 0));
  o = ok;
  o["query"] = &q2d;
  expectError(o, "operand 'query' must have shape [num_seqs, 8, 64], not "
                 "[2, 512]");
  Array q4h = Array::of("bf16", {4, 4, kD},
                        std::vector<uint16_t>(4 * 4 * kD, 0));
  o = ok;
  o["query"] = &q4h;
  expectError(o, "dimension 1 is compiled in as 8");
  // inconsistent sizes
  Array lens3 = Array::of("i32", {3}, std::vector<int32_t>{1, 1, 1});
  o = ok;
  o["seq_lens"] = &lens3;
  expectError(o, "operand 'seq_lens' has num_seqs = 3");
  // byte count against the shape
  Array shortQ = q;
  shortQ.bytes.pop_back();
  o = ok;
  o["query"] = &shortQ;
  expectError(o, "operand 'query' holds");
  // a shape whose element count overflows
  Array huge = q;
  huge.shape = {int64_t(1) << 40, kHq, int64_t(1) << 30};
  o = ok;
  o["query"] = &huge;
  expectError(o, "operand 'query' holds 2048 bytes, not the 2 per element "
                 "its shape [1099511627776, 8, 1073741824] needs");
  // missing and unknown operands
  o = ok;
  o.erase("seq_lens");
  expectError(o, "missing operand 'seq_lens' [num_seqs] i32");
  o = ok;
  o["sinks"] = &lens3;
  expectError(o, "unknown operand 'sinks'");
  // a cache too small for the block table
  std::vector<int32_t> tables = b.tables;
  tables[1] = int32_t(b.numBlocks); // sequence 0's second block
  Array badTables = Array::of("i32", b.blockTables.shape, tables);
  o = ok;
  o["block_tables"] = &badTables;
  expectError(o, "block_tables[0, 1] = " + std::to_string(b.numBlocks) +
                     " is not a block of the cache");
  // unused columns may hold anything
  tables = b.tables;
  tables[b.maxBlocks - 1] = 1 << 30;
  Array padded = Array::of("i32", b.blockTables.shape, tables);
  o = ok;
  o["block_tables"] = &padded;
  EXPECT_TRUE(static_cast<bool>(prog->plan("decode_attention", o)));
  // seq_lens beyond the table
  Array longLens = Array::of("i32", {2}, std::vector<int32_t>{40, 1000});
  o = ok;
  o["seq_lens"] = &longLens;
  expectError(o, "seq_lens[1] = 1000 is outside [0, max_blocks * "
                 "block_size = 64]");
  // sizes
  RunOptions bad;
  bad.sizes["num_partitions"] = 0;
  expectError(ok, "num_partitions must be at least 1", bad);
  bad.sizes = {{"num_seqs", 5}};
  expectError(ok, "size num_seqs = 5 contradicts operand 'query'", bad);
  bad.sizes = {{"bogus", 1}};
  expectError(ok, "unknown size 'bogus'", bad);
  // The buffer budget: the run needs about 48 KiB; huge partition counts
  // overflow it whatever the limit.
  RunOptions small;
  small.maxBufferBytes = 4096;
  expectError(ok, "the run's buffers need more than 4096 bytes "
                  "(maxBufferBytes; the largest is 'cache')", small);
  RunOptions many;
  many.maxBufferBytes = 0;
  many.sizes["num_partitions"] = INT32_MAX;
  ASSERT_TRUE(static_cast<bool>(prog->plan("decode_attention", ok, many)));
  many.maxBufferBytes = uint64_t(1) << 40;
  expectError(ok, "the largest is 'partial_out'", many);
  // the wrong op
  auto wrongKind = prog->cacheWrite(q, q, b.slotMapping, b.emptyCache, {},
                                    "decode_0");
  ASSERT_FALSE(static_cast<bool>(wrongKind));
  EXPECT_NE(errorOf(wrongKind.takeError())
                .find("op 'decode_0' is a decode_attention, not a "
                      "cache_write"),
            std::string::npos);
}

TEST(LaunchProgram, BadCacheWriteAndPagedInput) {
  auto prog = loadProgram();
  ASSERT_TRUE(prog);
  Batch b({20}, 2);
  std::vector<int64_t> slots = b.slots;
  slots[3] = b.numBlocks * kBs; // one past the cache
  Array badSlots = Array::of("i64", b.slotMapping.shape, slots);
  auto w = prog->cacheWrite(b.key, b.value, badSlots, b.emptyCache);
  ASSERT_FALSE(static_cast<bool>(w));
  EXPECT_NE(errorOf(w.takeError())
                .find("slot_mapping[3] = " + std::to_string(b.numBlocks * kBs) +
                      " is past the cache"),
            std::string::npos);
  // The i8 spelling of the byte cache is accepted; checks can be turned
  // off (the kernels then skip the slot, docs/kernel-input-policy.md).
  Array i8Cache = b.emptyCache;
  i8Cache.dtype = "i8";
  RunOptions unchecked;
  unchecked.checkIndices = false;
  auto w2 = prog->cacheWrite(b.key, b.value, badSlots, i8Cache, {}, "",
                             unchecked);
  ASSERT_TRUE(static_cast<bool>(w2)) << llvm::toString(w2.takeError());
  EXPECT_EQ(w2->dtype, "u8");

  std::mt19937_64 rng(1);
  Array q = Array::of("bf16", {4, kHq, kD}, randomBf16(rng, 4 * kHq * kD).first);
  auto paged = [&](std::vector<int32_t> qsl) {
    Array a = Array::of("i32", {int64_t(qsl.size())}, qsl);
    auto r = prog->pagedAttention(q, b.emptyCache, b.blockTables, b.seqLens,
                                  a);
    EXPECT_FALSE(static_cast<bool>(r));
    return r ? std::string() : errorOf(r.takeError());
  };
  EXPECT_NE(paged({0, 2, 4}).find("query_start_loc must have num_seqs + 1 = "
                                  "2 entries, not 3"),
            std::string::npos);
  EXPECT_NE(paged({0, 5}).find("query_start_loc[1] = 5 is not ascending "
                               "within [0, num_tokens = 4]"),
            std::string::npos);
  Batch shortSeq({2}, 2);
  Array qsl = Array::of("i32", {2}, std::vector<int32_t>{0, 4});
  auto r = prog->pagedAttention(q, shortSeq.emptyCache, shortSeq.blockTables,
                                shortSeq.seqLens, qsl);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(errorOf(r.takeError())
                .find("sequence 0 has 4 query tokens but seq_lens[0] = 2"),
            std::string::npos);
}

TEST(LaunchProgram, LoadErrors) {
  const Compiled &c = compiled();
  // A JSON of another program.
  std::string json = c.json;
  size_t at = json.find("\"write_0_cache_write\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 21, "\"other_0_cache_write\"");
  auto p = Program::load(bytes(c.hsaco), json);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_NE(llvm::toString(p.takeError())
                .find("kernel 'other_0_cache_write' is not in the code "
                      "object"),
            std::string::npos);
  // A workspace whose kernels disagree about its shape.
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(c.json);
  ASSERT_TRUE(static_cast<bool>(doc));
  for (llvm::json::Value &k : *doc->getAsObject()->getArray("kernels"))
    if (k.getAsObject()->getString("name") == llvm::StringRef("decode_0_merge"))
      for (llvm::json::Value &a : *k.getAsObject()->getArray("args"))
        if (a.getAsObject()->getString("name") ==
            llvm::StringRef("partial_sum"))
          (*a.getAsObject())["dtype"] = "i32";
  std::string edited;
  llvm::raw_string_ostream os(edited);
  os << *doc;
  os.flush();
  auto mismatch = Program::load(bytes(c.hsaco), edited);
  ASSERT_FALSE(static_cast<bool>(mismatch));
  EXPECT_NE(llvm::toString(mismatch.takeError())
                .find("buffer 'partial_sum' is f32 [num_seqs, 8, "
                      "num_partitions] in an earlier kernel of 'decode_0' but "
                      "i32"),
            std::string::npos);
  auto f = Program::loadFile("/nonexistent.hsaco");
  ASSERT_FALSE(static_cast<bool>(f));
  EXPECT_NE(llvm::toString(f.takeError()).find("cannot read"),
            std::string::npos);
}

} // namespace

namespace {

// The kernel-description reader's fields the runtime relies on: op, params
// and each argument's access, and their errors.
TEST(KernelsJsonForLaunch, ReadsOpParamsAndAccess) {
  auto ks = emu::parseKernelsJson(R"({"kernels": [{"name": "f_0_merge",
      "op": "merge_partitions", "grid": ["n", 1, 1],
      "params": {"head_dim": 64, "block_size": 16},
      "args": [{"name": "x", "kind": "global_buffer", "dtype": "f32",
                "shape": ["n", 4], "access": "read_write"},
               {"name": "n", "kind": "by_value", "dtype": "i32",
                "shape": [], "access": "value"}]}]})");
  ASSERT_TRUE(static_cast<bool>(ks)) << llvm::toString(ks.takeError());
  const emu::KernelDescription &k = (*ks)[0];
  EXPECT_EQ(k.op, "merge_partitions");
  EXPECT_EQ(k.params.at("head_dim"), 64);
  EXPECT_EQ(k.params.at("block_size"), 16);
  EXPECT_EQ(k.args[0].access, "read_write");
  EXPECT_EQ(k.args[1].access, "value");
  // Without them: empty (older JSON stays readable).
  auto bare = emu::parseKernelsJson(
      R"({"kernels": [{"name": "k", "args": []}]})");
  ASSERT_TRUE(static_cast<bool>(bare));
  EXPECT_TRUE((*bare)[0].op.empty());
  EXPECT_TRUE((*bare)[0].params.empty());
  auto err = [](const char *json) {
    auto r = emu::parseKernelsJson(json);
    EXPECT_FALSE(static_cast<bool>(r)) << json;
    return r ? std::string() : llvm::toString(r.takeError());
  };
  EXPECT_NE(err(R"({"kernels": [{"name": "k", "op": 3, "args": []}]})")
                .find("\"op\" is not a string"),
            std::string::npos);
  EXPECT_NE(err(R"({"kernels": [{"name": "k", "params": {"a": "b"},
                "args": []}]})")
                .find("\"params\" entry 'a' is not an integer"),
            std::string::npos);
  EXPECT_NE(err(R"({"kernels": [{"name": "k", "args": [{"name": "x",
                "kind": "global_buffer", "dtype": "f32", "shape": [1],
                "access": "sometimes"}]}]})")
                .find("\"access\" 'sometimes' is not read, write or read_write"),
            std::string::npos);
}

// A JSON whose buffers have no access cannot be classified: a clear error.
TEST(KernelsJsonForLaunch, ProgramNeedsAccess) {
  const Compiled &c = compiled();
  std::string json = c.json;
  size_t at;
  while ((at = json.find("\"access\"")) != std::string::npos)
    json.replace(at, 8, "\"accesz\"");
  auto p = Program::load(bytes(c.hsaco), json);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("has no \"access\""),
            std::string::npos);
}

} // namespace

namespace {

// uq.decode_attention_partial then uq.merge_partitions: two ops of one
// function (split_0: query + partial kernels, split_1: merge), chained
// through the caller, give decode attention within the reference's bound.
TEST(LaunchProgram, PartialThenMerge) {
  const int64_t slot = compiled().slot;
  std::string attrs =
      "{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
      "v_format = #uq.kv_format<fp4_e2m1>, layout = "
      "#uq.cache_layout<vllm_slot>}";
  std::string cache = "tensor<?x16x2x" + std::to_string(slot) + "xi8>";
  std::string q = "tensor<?x8x64xbf16>", out = "tensor<?x8x64xf32>";
  // The op's partition count and block-table width are static (its
  // verifier): 8 columns of 16 tokens, 2 partitions of 64.
  std::string po = "tensor<?x8x2x64xf32>", pm = "tensor<?x8x2xf32>";
  std::string ir =
      "func.func @split(%q: " + q + ", %c: " + cache +
      ", %bt: tensor<?x8xi32>, %lens: tensor<?xi32>) -> " + out + " {\n" +
      "  %o, %m, %l = uq.decode_attention_partial %q, %c, %bt, %lens scale "
      "0.125 partition_size 64 " +
      attrs + " : (" + q + ", " + cache +
      ", tensor<?x8xi32>, tensor<?xi32>) -> (" + po + ", " + pm + ", " + pm +
      ")\n" + "  %r = uq.merge_partitions %o, %m, %l : (" + po + ", " + pm +
      ", " + pm + ") -> " + out + "\n  return %r : " + out + "\n}\n";
  auto res = compileSource(ir, "launch-split", CompileOptions());
  ASSERT_TRUE(static_cast<bool>(res)) << llvm::toString(res.takeError());
  auto prog = Program::load(bytes(res->output), res->kernelsJson);
  ASSERT_TRUE(static_cast<bool>(prog)) << llvm::toString(prog.takeError());
  ASSERT_EQ((*prog)->ops().size(), 2u);
  EXPECT_EQ((*prog)->ops()[0].kind, OpKind::DecodeAttentionPartial);
  EXPECT_EQ((*prog)->ops()[1].kind, OpKind::MergePartitions);
  EXPECT_EQ((*prog)->ops()[1].inputs.size(), 3u);

  // The cache from the main program's cache-write kernel.
  auto main = loadProgram();
  ASSERT_TRUE(main);
  Batch b({40, 100, 3}, 13);
  auto c = main->cacheWrite(b.key, b.value, b.slotMapping, b.emptyCache);
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  std::mt19937_64 rng(21);
  auto [qb, qf] = randomBf16(rng, 3 * kHq * kD);
  Array query = Array::of("bf16", {3, kHq, kD}, qb);
  auto parts = (*prog)->decodeAttentionPartial(query, *c, b.blockTables,
                                               b.seqLens);
  ASSERT_TRUE(static_cast<bool>(parts)) << llvm::toString(parts.takeError());
  // max_blocks 8 x 16 tokens over partitions of 64: 2.
  EXPECT_EQ(parts->at("partial_out").shape,
            (std::vector<int64_t>{3, kHq, 2, kD}));
  EXPECT_EQ(parts->at("partial_max").shape, (std::vector<int64_t>{3, kHq, 2}));
  auto merged = (*prog)->mergePartitions(parts->at("partial_out"),
                                         parts->at("partial_max"),
                                         parts->at("partial_sum"));
  ASSERT_TRUE(static_cast<bool>(merged)) << llvm::toString(merged.takeError());
  std::vector<int32_t> qsl = {0, 1, 2, 3};
  EXPECT_EQ(outsideReference(b, c->bytes, qf, 3, qsl, merged->values<float>()),
            0);
  // Merging partial results whose partition counts disagree names them.
  Array shortSum = parts->at("partial_sum");
  shortSum.shape = {3, kHq, 1};
  shortSum.bytes.resize(3 * kHq * 4);
  auto bad = (*prog)->mergePartitions(parts->at("partial_out"),
                                      parts->at("partial_max"), shortSum);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError())
                .find("operand 'partial_sum' has num_partitions = 1"),
            std::string::npos);
}

} // namespace

namespace {

// Attention sinks: an operand of decode's and paged's merge kernels,
// required exactly when the op was compiled with them; both devices agree
// bit for bit and match the reference.
TEST(LaunchProgram, SinksOnBothDevices) {
  const int64_t slot = compiled().slot;
  std::string attrs =
      "{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
      "v_format = #uq.kv_format<fp4_e2m1>, layout = "
      "#uq.cache_layout<vllm_slot>}";
  std::string cache = "tensor<?x16x2x" + std::to_string(slot) + "xi8>";
  std::string q = "tensor<?x8x64xbf16>", out = "tensor<?x8x64xf32>";
  std::string sk = "tensor<8xf32>";
  std::string ir =
      "func.func @d(%q: " + q + ", %c: " + cache +
      ", %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %s: " + sk + ") -> " +
      out + " {\n  %o = uq.decode_attention %q, %c, %bt, %lens sinks %s "
      "scale 0.125 " +
      attrs + " : (" + q + ", " + cache + ", tensor<?x?xi32>, tensor<?xi32>, " +
      sk + ") -> " + out + "\n  return %o : " + out + "\n}\n";
  auto res = compileSource(ir, "launch-sinks", CompileOptions());
  ASSERT_TRUE(static_cast<bool>(res)) << llvm::toString(res.takeError());
  auto main = loadProgram();
  ASSERT_TRUE(main);
  Batch b({40, 100}, 17);
  auto c = main->cacheWrite(b.key, b.value, b.slotMapping, b.emptyCache);
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  std::mt19937_64 rng(5);
  auto [qb, qf] = randomBf16(rng, 2 * kHq * kD);
  Array query = Array::of("bf16", {2, kHq, kD}, qb);
  std::vector<float> sinkValues = {0.5f, 3.f, -1.f, 8.f, 0.f, 1.f, 2.f, -4.f};
  Array sinks = Array::of("f32", {kHq}, sinkValues);
  std::vector<std::vector<uint8_t>> outs;
  StandIn standIn; // keeps the stand-in loaded across both devices
  for (bool hip : {false, true}) {
    auto prog = Program::load(bytes(res->output), res->kernelsJson,
                              hip ? hipStandIn() : createEmulatorDevice());
    ASSERT_TRUE(static_cast<bool>(prog)) << llvm::toString(prog.takeError());
    // Without the sinks the op cannot run.
    auto missing = (*prog)->decodeAttention(query, *c, b.blockTables,
                                            b.seqLens);
    ASSERT_FALSE(static_cast<bool>(missing));
    EXPECT_NE(errorOf(missing.takeError())
                  .find("missing operand 'sinks' [8] f32"),
              std::string::npos);
    auto o = (*prog)->decodeAttention(query, *c, b.blockTables, b.seqLens,
                                      &sinks);
    ASSERT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
    std::vector<int32_t> qsl = {0, 1, 2};
    EXPECT_EQ(outsideReference(b, c->bytes, qf, 2, qsl, o->values<float>(),
                               sinkValues.data()),
              0);
    // The sinks matter: without them the reference is far off.
    EXPECT_GT(outsideReference(b, c->bytes, qf, 2, qsl, o->values<float>()),
              0);
    outs.push_back(o->bytes);
  }
  EXPECT_TRUE(outs[0] == outs[1]);
}

// An empty batch (no sequences, no new tokens): every grid is empty, no
// kernel launches, and the outputs are empty arrays of the right shape.
TEST(LaunchProgram, EmptyBatch) {
  StandIn standIn;
  long launches = standIn.calls("hipModuleLaunchKernel");
  auto prog = loadProgram(hipStandIn());
  ASSERT_TRUE(prog);
  Batch b({20}, 4);
  Array q = Array::of("bf16", {0, kHq, kD}, std::vector<uint16_t>());
  Array bt = Array::of("i32", {0, 3}, std::vector<int32_t>());
  Array lens = Array::of("i32", {0}, std::vector<int32_t>());
  auto o = prog->decodeAttention(q, b.emptyCache, bt, lens);
  ASSERT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
  EXPECT_EQ(o->shape, (std::vector<int64_t>{0, kHq, kD}));
  EXPECT_TRUE(o->bytes.empty());
  Array k = Array::of("bf16", {0, kHkv, kD}, std::vector<uint16_t>());
  Array slots = Array::of("i64", {0}, std::vector<int64_t>());
  auto c = prog->cacheWrite(k, k, slots, b.emptyCache);
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_TRUE(c->bytes == b.emptyCache.bytes);
  EXPECT_EQ(standIn.calls("hipModuleLaunchKernel"), launches);
}

} // namespace

namespace {

// The format options' operands and workspaces (docs/accuracy.md): channel
// means k_mean / v_mean (operands of the cache write, of decode's query
// and merge kernels) and per-32 query scales (query_scales and query_bias:
// workspaces written by the query kernel, read by the partial kernel),
// classified from the JSON's access alone and checked against the
// reference with the same means and query precision.
TEST(LaunchProgram, ChannelMeansAndScaledQuery) {
  const int64_t slot = compiled().slot;
  std::string fmt =
      "k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
      "v_format = #uq.kv_format<fp4_e2m1>, layout = "
      "#uq.cache_layout<vllm_slot>";
  std::string kv = "tensor<?x2x64xbf16>", mean = "tensor<2x64xf32>";
  std::string cache = "tensor<?x16x2x" + std::to_string(slot) + "xi8>";
  std::string q = "tensor<?x8x64xbf16>", out = "tensor<?x8x64xf32>";
  std::string ir =
      "func.func @w(%k: " + kv + ", %v: " + kv + ", %s: tensor<?xi64>, %c: " +
      cache + ", %mk: " + mean + ", %mv: " + mean + ") -> " + cache +
      " {\n  %r = uq.cache_write %k, %v, %s into %c k_mean %mk : " + mean +
      " v_mean %mv : " + mean + " {" + fmt + "} : " + kv + ", " + kv +
      ", tensor<?xi64> into " + cache + "\n  return %r : " + cache +
      "\n}\n" + "func.func @d(%q: " + q + ", %c: " + cache +
      ", %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %mk: " + mean +
      ", %mv: " + mean + ") -> " + out +
      " {\n  %o = uq.decode_attention %q, %c, %bt, %lens k_mean %mk v_mean "
      "%mv scale 0.125 {" +
      fmt +
      ", query_precision = #uq<query_precision fp8_e4m3_scaled>} : (" + q +
      ", " + cache + ", tensor<?x?xi32>, tensor<?xi32>, " + mean + ", " +
      mean + ") -> " + out + "\n  return %o : " + out + "\n}\n";
  auto res = compileSource(ir, "launch-means", CompileOptions());
  ASSERT_TRUE(static_cast<bool>(res)) << llvm::toString(res.takeError());
  auto prog = Program::load(bytes(res->output), res->kernelsJson);
  ASSERT_TRUE(static_cast<bool>(prog)) << llvm::toString(prog.takeError());
  const OpInfo &d = (*prog)->ops()[1];
  auto names = [](const std::vector<BufferInfo> &bs) {
    std::vector<std::string> n;
    for (const BufferInfo &b : bs)
      n.push_back(b.name);
    return n;
  };
  EXPECT_EQ(names((*prog)->ops()[0].inputs),
            (std::vector<std::string>{"key", "value", "slot_mapping", "cache",
                                      "k_mean", "v_mean"}));
  EXPECT_EQ(names(d.inputs),
            (std::vector<std::string>{"query", "k_mean", "cache",
                                      "block_tables", "seq_lens", "v_mean"}));
  EXPECT_EQ(names(d.workspaces),
            (std::vector<std::string>{"query_prepared", "query_scales",
                                      "query_bias", "partial_out",
                                      "partial_max", "partial_sum"}));

  Batch b({40, 100}, 23);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> kMean(kHkv * kD), vMean(kHkv * kD);
  for (float &x : kMean)
    x = dist(rng);
  for (float &x : vMean)
    x = dist(rng);
  Array mk = Array::of("f32", {kHkv, kD}, kMean);
  Array mv = Array::of("f32", {kHkv, kD}, vMean);
  auto c = (*prog)->cacheWrite(b.key, b.value, b.slotMapping, b.emptyCache,
                               {{"k_mean", &mk}, {"v_mean", &mv}});
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  std::vector<uint8_t> refCache(ref::cacheBytes(b.geometry()), 0);
  ref::Status st = ref::cacheWrite(
      ref::keyFormat(), ref::valueFormat(), b.geometry(), b.k.data(),
      b.v.data(), b.slots.data(), int64_t(b.slots.size()) - 1,
      refCache.data(), kMean.data(), vMean.data());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(c->bytes == refCache);

  auto [qb, qf] = randomBf16(rng, 2 * kHq * kD);
  Array query = Array::of("bf16", {2, kHq, kD}, qb);
  auto o = (*prog)->decodeAttention(query, *c, b.blockTables, b.seqLens,
                                    nullptr,
                                    {{"k_mean", &mk}, {"v_mean", &mv}});
  ASSERT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
  ref::AttentionParams p;
  p.softmaxScale = kScale;
  p.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
  p.kMean = kMean.data();
  p.vMean = vMean.data();
  std::vector<int32_t> qsl = {0, 1, 2};
  std::vector<float> want(2 * kHq * kD);
  std::vector<double> bound(want.size());
  st = ref::pagedAttention(ref::keyFormat(), ref::valueFormat(),
                           b.geometry(), c->bytes.data(), p, 0, qf.data(), 2,
                           kHq, qsl.data(), 2, b.tables.data(), b.maxBlocks,
                           b.lens.data(), nullptr, want.data());
  ASSERT_TRUE(st.ok()) << st.message();
  st = ref::attentionErrorBounds(
      ref::keyFormat(), ref::valueFormat(), b.geometry(), c->bytes.data(), p,
      0, qf.data(), 2, kHq, qsl.data(), 2, b.tables.data(), b.maxBlocks,
      b.lens.data(), nullptr, test::probabilityError(ref::valueFormat()),
      bound.data());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::countOutside(o->values<float>(), want, bound), 0);
  // The means are operands like any other: a wrong shape names them.
  Array shortMean = Array::of("f32", {kHkv, 32}, std::vector<float>(64));
  auto bad = (*prog)->decodeAttention(query, *c, b.blockTables, b.seqLens,
                                      nullptr,
                                      {{"k_mean", &shortMean},
                                       {"v_mean", &mv}});
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError())
                .find("operand 'k_mean' must have shape [2, 64], not [2, 32]"),
            std::string::npos);
}

} // namespace

namespace {

// Decode and paged batches on both devices: lengths at and around block
// (16) and partition (64) boundaries, empty sequences, a single sequence,
// prefill chunks that start mid-block and whole prompts.
struct DeviceCase {
  std::vector<int32_t> lens, queryLens;
};

void PrintTo(const DeviceCase &c, std::ostream *os) {
  *os << "lens";
  for (size_t i = 0; i < c.lens.size(); ++i)
    *os << "_" << c.lens[i] << "q" << c.queryLens[i];
}

class BothDevices : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(BothDevices, BitIdenticalAndWithinTheReference) {
  const DeviceCase &dc = GetParam();
  StandIn standIn;
  auto emuProg = loadProgram();
  auto hipProg = loadProgram(hipStandIn());
  ASSERT_TRUE(emuProg && hipProg);
  Batch b(dc.lens, 100 + dc.lens.size());
  auto cache = emuProg->cacheWrite(b.key, b.value, b.slotMapping,
                                   b.emptyCache);
  auto hipCache = hipProg->cacheWrite(b.key, b.value, b.slotMapping,
                                      b.emptyCache);
  ASSERT_TRUE(cache && hipCache);
  EXPECT_TRUE(cache->bytes == hipCache->bytes);
  EXPECT_TRUE(cache->bytes == b.referenceCache());
  const int64_t seqs = dc.lens.size();
  std::mt19937_64 rng(seqs * 7919 + dc.lens[0]);
  // Decode.
  auto [qb, qf] = randomBf16(rng, seqs * kHq * kD);
  Array q = Array::of("bf16", {seqs, kHq, kD}, qb);
  auto d1 = emuProg->decodeAttention(q, *cache, b.blockTables, b.seqLens);
  auto d2 = hipProg->decodeAttention(q, *cache, b.blockTables, b.seqLens);
  ASSERT_TRUE(d1 && d2);
  EXPECT_TRUE(d1->bytes == d2->bytes);
  std::vector<int32_t> qslDecode(seqs + 1);
  std::iota(qslDecode.begin(), qslDecode.end(), 0);
  EXPECT_EQ(outsideReference(b, cache->bytes, qf, seqs, qslDecode,
                             d1->values<float>()),
            0);
  // Paged.
  std::vector<int32_t> qsl = {0};
  for (int32_t n : dc.queryLens)
    qsl.push_back(qsl.back() + n);
  const int64_t tokens = qsl.back();
  auto [pb, pf] = randomBf16(rng, tokens * kHq * kD);
  Array pq = Array::of("bf16", {tokens, kHq, kD}, pb);
  Array qslArr = Array::of("i32", {seqs + 1}, qsl);
  auto p1 = emuProg->pagedAttention(pq, *cache, b.blockTables, b.seqLens,
                                    qslArr);
  auto p2 = hipProg->pagedAttention(pq, *cache, b.blockTables, b.seqLens,
                                    qslArr);
  ASSERT_TRUE(p1 && p2);
  EXPECT_TRUE(p1->bytes == p2->bytes);
  EXPECT_EQ(outsideReference(b, cache->bytes, pf, tokens, qsl,
                             p1->values<float>()),
            0);
}

INSTANTIATE_TEST_SUITE_P(
    Launch, BothDevices,
    ::testing::Values(DeviceCase{{1}, {1}}, DeviceCase{{16}, {16}},
                      DeviceCase{{17, 64}, {1, 64}},
                      DeviceCase{{65, 0, 128}, {20, 0, 1}},
                      DeviceCase{{33, 31, 2, 300}, {3, 31, 2, 40}},
                      DeviceCase{{200, 7, 90, 15, 64}, {1, 7, 1, 15, 33}}));

} // namespace
