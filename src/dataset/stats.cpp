// compute_stats: chunk-aligned blocks read in parallel, per-block partials merged with Chan's
// formula (include/lazycube/dataset/stats.hpp).
#include "lazycube/dataset/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"
#include "util/text.hpp"
#include "util/thread_pool.hpp"

namespace lazycube {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Bytes a block aims at: several chunks along the first dim when chunks are small.
constexpr std::uint64_t kBlockBytes = 8u << 20;
// The largest block: a chunk bigger than this is read in parts.
constexpr std::uint64_t kMaxBlockBytes = 64u << 20;
// Blocks a pass aims at, at least, so that every thread has work.
constexpr std::uint64_t kMinBlocks = 128;

struct Partial {
  std::uint64_t n = 0;
  std::uint64_t nan = 0;
  double mean = 0.0;
  double m2 = 0.0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
};

// Chan, Golub and LeVeque's pairwise update: `a` becomes the partial of both sets.
void merge(Partial& a, const Partial& b) {
  a.nan += b.nan;
  if (b.n == 0) return;
  if (a.n == 0) {
    a.n = b.n, a.mean = b.mean, a.m2 = b.m2, a.min = b.min, a.max = b.max;
    return;
  }
  const double na = static_cast<double>(a.n), nb = static_cast<double>(b.n), n = na + nb;
  const double delta = b.mean - a.mean;
  a.mean += delta * (nb / n);
  a.m2 += b.m2 + delta * delta * (na * nb / n);
  a.n += b.n;
  a.min = std::min(a.min, b.min);
  a.max = std::max(a.max, b.max);
}

// Partial of at most kSubRun contiguous elements of type T: two passes (sum, then squared
// deviations from the run's mean; the second hits L1), four accumulators each so that the
// passes are not one long dependency chain. NaN compares false, so min/max skip it unmasked.
constexpr std::size_t kSubRun = 4096;
constexpr std::size_t kLanes = 4;

template <class T>
Partial sub_run_partial(const T* x, std::size_t count) {
  constexpr bool can_be_nan = std::is_floating_point_v<T>;
  double sum[kLanes] = {}, lo[kLanes], hi[kLanes];
  std::uint64_t n[kLanes] = {};
  for (std::size_t j = 0; j < kLanes; ++j) {
    lo[j] = std::numeric_limits<double>::infinity();
    hi[j] = -std::numeric_limits<double>::infinity();
  }
  const std::size_t whole = count - count % kLanes;
  auto step = [&](std::size_t j, double v) {
    const bool ok = !can_be_nan || !std::isnan(v);
    n[j] += ok;
    sum[j] += ok ? v : 0.0;
    lo[j] = v < lo[j] ? v : lo[j];
    hi[j] = v > hi[j] ? v : hi[j];
  };
  for (std::size_t i = 0; i < whole; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) step(j, static_cast<double>(x[i + j]));
  for (std::size_t i = whole; i < count; ++i) step(0, static_cast<double>(x[i]));
  Partial p;
  double total = 0.0;
  for (std::size_t j = 0; j < kLanes; ++j) {
    p.n += n[j];
    total += sum[j];
    p.min = std::min(p.min, lo[j]);
    p.max = std::max(p.max, hi[j]);
  }
  p.nan = count - p.n;
  if (p.n == 0) return p;
  p.mean = total / static_cast<double>(p.n);
  double m2[kLanes] = {};
  auto dev = [&](std::size_t j, double v) {
    const double d = v - p.mean;
    m2[j] += (!can_be_nan || !std::isnan(v)) ? d * d : 0.0;
  };
  for (std::size_t i = 0; i < whole; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) dev(j, static_cast<double>(x[i + j]));
  for (std::size_t i = whole; i < count; ++i) dev(0, static_cast<double>(x[i]));
  p.m2 = (m2[0] + m2[1]) + (m2[2] + m2[3]);
  return p;
}

// The same for float32/float64 in one pass (GCC vector extensions; SSE2 by default, AVX2 where
// the CPU has it, chosen at run time by target_clones: no -march needed): sums of the deviations
// from a shift, the sub-run's first non-NaN value, so m2 = Q - S^2/n. With the shift inside the
// sub-run's range, Q <= 2 n m2 (m2 >= range^2 / 2), so the subtraction loses at most
// log2(2 * kSubRun) = 13 of double's 53 bits: the 1e-12 of the two-pass reference holds.
// NaN lanes are replaced by the shift (deviation 0, not counted) before the float64 conversion;
// min/max and the NaN test run in the input type (8 float32 lanes per step). Lane-wise IEEE
// operations without FMA contraction (the avx2 clone has no FMA), so both clones give the same bits.
using V4d = double __attribute__((vector_size(32)));
using V4f = float __attribute__((vector_size(16)));
using V8f = float __attribute__((vector_size(32)));
using V8i = std::int32_t __attribute__((vector_size(32)));
using V4l = std::int64_t __attribute__((vector_size(32)));

// Partial of a sub-run from its shifted sums.
Partial shifted_partial(std::uint64_t n, std::uint64_t count, double shift, double s, double q, double lo,
                        double hi) {
  Partial p;
  p.n = n;
  p.nan = count - n;
  if (n == 0) return p;
  const double dn = static_cast<double>(n);
  p.mean = shift + s / dn;
  p.m2 = std::max(0.0, q - s * (s / dn));
  p.min = lo;
  p.max = hi;
  return p;
}

// The shift of a sub-run: its first non-NaN value (0 when that is infinite: the sums are then
// infinite or NaN, as NumPy's mean and std are). Sets `all_nan` when there is none.
template <class T>
T shift_of(const T* x, std::size_t count, bool& all_nan) {
  std::size_t i = 0;
  while (i < count && std::isnan(x[i])) ++i;
  all_nan = i == count;
  return all_nan || !std::isfinite(x[i]) ? T(0) : x[i];
}

[[gnu::always_inline]] inline Partial simd_sub_run_f32(const float* x, std::size_t count) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  bool all_nan = false;
  const float shift = shift_of(x, count, all_nan);
  if (all_nan) return shifted_partial(0, count, 0, 0, 0, 0, 0);
  const V8f zero = {};
  const V8f vshift = zero + shift;
  const V4d dshift = V4d{} + static_cast<double>(shift);
  V8f lo = zero + inf, hi = zero - inf;
  V8i n = {};
  V4d s0 = {}, s1 = {}, q0 = {}, q1 = {};
  const std::size_t whole = count - count % 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    V8f v;
    std::memcpy(&v, x + i, sizeof v);
    const V8i ok = v == v;  // -1 where not NaN
    n -= ok;
    lo = v < lo ? v : lo;  // NaN keeps lo / hi
    hi = v > hi ? v : hi;
    const V8f w = ok ? v : vshift;
    const V4d a = __builtin_convertvector(__builtin_shufflevector(w, w, 0, 1, 2, 3), V4d) - dshift;
    const V4d b = __builtin_convertvector(__builtin_shufflevector(w, w, 4, 5, 6, 7), V4d) - dshift;
    s0 += a, s1 += b;
    q0 += a * a, q1 += b * b;
  }
  std::uint64_t count_ok = 0;
  float l = inf, h = -inf;
  for (int j = 0; j < 8; ++j) count_ok += static_cast<std::uint64_t>(n[j]), l = std::min(l, lo[j]), h = std::max(h, hi[j]);
  const V4d s4 = s0 + s1, q4 = q0 + q1;
  double s = (s4[0] + s4[1]) + (s4[2] + s4[3]), q = (q4[0] + q4[1]) + (q4[2] + q4[3]);
  for (std::size_t i = whole; i < count; ++i) {
    const float v = x[i];
    if (std::isnan(v)) continue;
    const double d = static_cast<double>(v) - static_cast<double>(shift);
    ++count_ok, s += d, q += d * d, l = std::min(l, v), h = std::max(h, v);
  }
  return shifted_partial(count_ok, count, shift, s, q, l, h);
}

[[gnu::always_inline]] inline Partial simd_sub_run_f64(const double* x, std::size_t count) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  bool all_nan = false;
  const double shift = shift_of(x, count, all_nan);
  if (all_nan) return shifted_partial(0, count, 0, 0, 0, 0, 0);
  const V4d zero = {};
  const V4d vshift = zero + shift;
  V4d lo = zero + inf, hi = zero - inf, s0 = {}, q0 = {};
  V4l n = {};
  const std::size_t whole = count - count % 4;
  for (std::size_t i = 0; i < whole; i += 4) {
    V4d v;
    std::memcpy(&v, x + i, sizeof v);
    const V4l ok = v == v;
    n -= ok;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    const V4d d = (ok ? v : vshift) - vshift;
    s0 += d;
    q0 += d * d;
  }
  std::uint64_t count_ok = 0;
  double l = inf, h = -inf;
  for (int j = 0; j < 4; ++j) count_ok += static_cast<std::uint64_t>(n[j]), l = std::min(l, lo[j]), h = std::max(h, hi[j]);
  double s = (s0[0] + s0[1]) + (s0[2] + s0[3]), q = (q0[0] + q0[1]) + (q0[2] + q0[3]);
  for (std::size_t i = whole; i < count; ++i) {
    const double v = x[i];
    if (std::isnan(v)) continue;
    const double d = v - shift;
    ++count_ok, s += d, q += d * d, l = std::min(l, v), h = std::max(h, v);
  }
  return shifted_partial(count_ok, count, shift, s, q, l, h);
}

// ThreadSanitizer instruments target_clones' ifunc resolver, which the dynamic loader runs before
// the TSan runtime is initialised (a crash at start-up): TSan builds take the default clone only.
#if defined(LAZYCUBE_SANITIZER_THREAD)
#define LAZYCUBE_SIMD_CLONES
#else
#define LAZYCUBE_SIMD_CLONES [[gnu::target_clones("avx2", "default")]]
#endif
LAZYCUBE_SIMD_CLONES Partial sub_run_partial_simd(const float* x, std::size_t count) {
  return simd_sub_run_f32(x, count);
}
LAZYCUBE_SIMD_CLONES Partial sub_run_partial_simd(const double* x, std::size_t count) {
  return simd_sub_run_f64(x, count);
}

// Partial of `count` contiguous elements: sub-runs merged with Chan's formula.
template <class T>
Partial run_partial(const std::byte* data, std::size_t count) {
  const T* x = reinterpret_cast<const T*>(data);  // the block buffer is aligned for T
  auto sub = [](const T* at, std::size_t n) {
    if constexpr (std::is_floating_point_v<T>) {
      return sub_run_partial_simd(at, n);
    } else {
      return sub_run_partial(at, n);
    }
  };
  if (count <= kSubRun) return sub(x, count);
  Partial p;
  for (std::size_t at = 0; at < count; at += kSubRun) merge(p, sub(x + at, std::min(kSubRun, count - at)));
  return p;
}

bool has_stats_dtype(const DataType& t) {
  return t.kind == DTypeKind::Bool || t.kind == DTypeKind::Int || t.kind == DTypeKind::UInt ||
         t.kind == DTypeKind::Float;
}

// The geometry of one variable's pass: blocks of whole chunks (several along dim 0 when chunks
// are small) and where each element's kept index lies.
struct Plan {
  Shape shape, block, grid;        // variable shape, block extent per dim, blocks per dim
  std::vector<bool> kept;          // per dim
  std::vector<std::uint64_t> kept_stride;  // per dim: stride in the kept C-order index (0: reduced)
  std::size_t run_from = 0;        // dims [run_from, ndim) are reduced: one contiguous run
  std::uint64_t blocks = 1;
};

Plan plan_of(const Variable& variable, const std::vector<bool>& kept) {
  Plan p;
  p.shape = variable.shape();
  const std::size_t nd = p.shape.size();
  p.kept = kept;
  Shape chunks = variable.chunks();
  if (chunks.size() != nd) chunks = p.shape;
  p.block.resize(nd);
  p.grid.resize(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    p.block[d] = std::max<std::uint64_t>(1, std::min(chunks[d], p.shape[d]));
    p.grid[d] = p.shape[d] == 0 ? 0 : (p.shape[d] + p.block[d] - 1) / p.block[d];
  }
  if (nd > 0 && p.grid[0] > 1) {  // group small chunks along dim 0, keeping tasks for every thread
    const std::uint64_t bytes = shape_size(p.block) * variable.dtype().itemsize;
    const std::uint64_t want = std::max<std::uint64_t>(1, kBlockBytes / std::max<std::uint64_t>(1, bytes));
    std::uint64_t others = 1;
    for (std::size_t d = 1; d < nd; ++d) others *= p.grid[d];
    const std::uint64_t tasks = kMinBlocks;  // not the thread count: the result must not depend on it
    const std::uint64_t spread = std::max<std::uint64_t>(1, p.grid[0] * others / tasks);
    const std::uint64_t k = std::min(want, spread);
    p.block[0] = std::min(p.shape[0], p.block[0] * k);
    p.grid[0] = (p.shape[0] + p.block[0] - 1) / p.block[0];
  }
  // Unchunked (or huge-chunked) data: blocks cut to at most kMaxBlockBytes, outer dims first.
  for (std::size_t d = 0; d < nd; ++d) {
    while (p.block[d] > 1 && shape_size(p.block) * variable.dtype().itemsize > kMaxBlockBytes)
      p.block[d] = (p.block[d] + 1) / 2;
    p.grid[d] = p.shape[d] == 0 ? 0 : (p.shape[d] + p.block[d] - 1) / p.block[d];
  }
  for (const auto g : p.grid) p.blocks *= g;
  p.kept_stride.assign(nd, 0);
  std::uint64_t stride = 1;
  for (std::size_t d = nd; d-- > 0;)
    if (kept[d]) p.kept_stride[d] = stride, stride *= p.shape[d];
  p.run_from = nd;
  while (p.run_from > 0 && !kept[p.run_from - 1]) --p.run_from;
  return p;
}

// Block buffers of one pass, reused from block to block (no zeroing or fresh pages per block)
// and freed when the pass ends: at most one per thread in flight.
class BufferPool {
 public:
  std::vector<std::byte> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return {};
    std::vector<std::byte> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give(std::vector<std::byte> b) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<std::byte>> free_;
};

// Block `b`'s window and extent.
struct BlockWindow {
  ArraySelection window;
  Shape extent;
  std::uint64_t n = 0;  // elements
};

BlockWindow block_window(const Plan& p, std::uint64_t b) {
  const std::size_t nd = p.shape.size();
  BlockWindow w{ArraySelection(nd), Shape(nd), 0};
  for (std::size_t d = nd; d-- > 0;) {
    const std::uint64_t i = b % p.grid[d];
    b /= p.grid[d];
    const std::uint64_t start = i * p.block[d];
    w.extent[d] = std::min(p.block[d], p.shape[d] - start);
    w.window[d] = IndexRange{start, w.extent[d], 1};
  }
  w.n = shape_size(w.extent);
  return w;
}

// float16 has no arithmetic: its values are summed as float32 (exact: every float16 is one).
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, float16>, float, T>;

// Reads block `w` into `bytes` (grown as needed; operator new's alignment suits every T) and
// returns its values (float16: widened into `widened`).
template <class T>
const AccOf<T>* read_block(const Variable& variable, const BlockWindow& w, std::vector<std::byte>& bytes,
                           std::vector<float>& widened) {
  if (bytes.size() < w.n * sizeof(T)) bytes.resize(w.n * sizeof(T));
  const MutableByteView dest(bytes.data(), w.n * sizeof(T));
  variable.read_windows_into(std::span<const ArraySelection>(&w.window, 1), std::span<const MutableByteView>(&dest, 1),
                             nullptr);
  const T* buffer = reinterpret_cast<const T*>(bytes.data());
  if constexpr (std::is_same_v<T, float16>) {
    widened.resize(w.n);
    for (std::uint64_t i = 0; i < w.n; ++i) widened[i] = half_to_float(buffer[i]);
    return widened.data();
  } else {
    return buffer;
  }
}

// Partials of block `b`, keyed by the global kept index (few distinct keys per block).
using BlockPartials = std::vector<std::pair<std::uint64_t, Partial>>;

// Reads block `b` and returns its partials (the last dim reduced: runs of the reduced trailing dims).
template <class T>
BlockPartials block_partials(const Variable& variable, const Plan& p, std::uint64_t b, BufferPool& pool) {
  using Acc = AccOf<T>;
  const std::size_t nd = p.shape.size();
  const BlockWindow w = block_window(p, b);
  std::vector<std::byte> bytes = pool.take();
  std::vector<float> widened;
  const Acc* values = read_block<T>(variable, w, bytes, widened);
  // Runs: the reduced trailing dims; the leading dims are walked with an odometer.
  std::uint64_t run = 1;
  for (std::size_t d = p.run_from; d < nd; ++d) run *= w.extent[d];
  BlockPartials local;
  std::vector<std::uint64_t> idx(p.run_from, 0);
  std::uint64_t key = 0;
  for (std::size_t d = 0; d < p.run_from; ++d) key += w.window[d].start * p.kept_stride[d];
  const std::uint64_t runs = run == 0 ? 0 : w.n / run;
  for (std::uint64_t r = 0; r < runs; ++r) {
    const Partial part = run_partial<Acc>(reinterpret_cast<const std::byte*>(values + r * run), run);
    if (!local.empty() && local.back().first == key) {
      merge(local.back().second, part);
    } else {
      local.emplace_back(key, part);
    }
    for (std::size_t d = p.run_from; d-- > 0;) {  // next run
      key += p.kept_stride[d];
      if (++idx[d] < w.extent[d]) break;
      key -= p.kept_stride[d] * w.extent[d];
      idx[d] = 0;
    }
  }
  pool.give(std::move(bytes));
  return local;
}

// ---- The last dim kept (per-pixel statistics: keep latitude, longitude) ----
// Each value is a run of its own there: instead of a Partial per element, the blocks' rows are
// added element-wise into per-key sums of deviations from a shift (the key's first non-NaN value
// in block order; m2 = Q - S^2/n, see simd_sub_run_f32), read a wave of blocks at a time and
// reduced in tiles of keys, each tile by one task in block order: the same result with any thread
// count. The tile's sums (kTile keys, 48 bytes each) stay in L2 across the wave's rows.
constexpr std::uint64_t kTile = 4096;
// Block buffers a wave of the kept-trailing pass may hold.
constexpr std::uint64_t kWaveBytes = 256u << 20;

struct KeptSums {
  std::vector<double> shift, s, q, lo, hi;
  std::vector<double> n;  // counts, exact up to 2^53: double lanes like the sums
  explicit KeptSums(std::size_t k)
      : shift(k, 0.0), s(k, 0.0), q(k, 0.0), lo(k, std::numeric_limits<double>::infinity()),
        hi(k, -std::numeric_limits<double>::infinity()), n(k, 0) {}
};

// `len` values of a block row whose keys are key, key + 1, ...
template <class A>
struct Segment {
  const A* x;
  std::uint64_t key, len;
};

// One element's step (the scalar form of accumulate_simd).
template <class A>
[[gnu::always_inline]] inline void accumulate_one(double v, std::uint64_t j, double* shift, double* s, double* q,
                                                  double* lo, double* hi, double* n) {
  const bool ok = v == v;
  const double sh = ok && n[j] == 0 ? (v - v == 0.0 ? v : 0.0) : shift[j];  // an infinite first value: 0
  shift[j] = sh;
  const double d = ok ? v - sh : 0.0;
  s[j] += d;
  q[j] += d * d;
  n[j] += ok ? 1.0 : 0.0;
  lo[j] = v < lo[j] ? v : lo[j];
  hi[j] = v > hi[j] ? v : hi[j];
}

[[gnu::always_inline]] inline void load4(const double* x, V4d& out) { std::memcpy(&out, x, sizeof out); }
[[gnu::always_inline]] inline void load4(const float* x, V4d& out) {
  V4f v;
  std::memcpy(&v, x, sizeof v);
  out = __builtin_convertvector(v, V4d);
}

// accumulate for float32/float64: four keys per step, the same operations lane-wise.
template <class A>
[[gnu::always_inline]] inline void accumulate_simd(const A* x, std::uint64_t len, double* shift, double* s,
                                                   double* q, double* lo, double* hi, double* n) {
  const V4d zero = {};
  const std::uint64_t whole = len - len % 4;
  for (std::uint64_t j = 0; j < whole; j += 4) {
    V4d v, sh, sj, qj, lj, hj, nj;
    load4(x + j, v);
    std::memcpy(&sh, shift + j, sizeof sh);
    std::memcpy(&nj, n + j, sizeof nj);
    const V4l ok = v == v;
    const V4d finite = (v - v == zero) ? v : zero;
    sh = (ok & (nj == zero)) ? finite : sh;
    std::memcpy(shift + j, &sh, sizeof sh);
    const V4d d = ok ? v - sh : zero;
    std::memcpy(&sj, s + j, sizeof sj);
    std::memcpy(&qj, q + j, sizeof qj);
    std::memcpy(&lj, lo + j, sizeof lj);
    std::memcpy(&hj, hi + j, sizeof hj);
    sj += d;
    qj += d * d;
    nj += ok ? zero + 1.0 : zero;
    lj = v < lj ? v : lj;
    hj = v > hj ? v : hj;
    std::memcpy(s + j, &sj, sizeof sj);
    std::memcpy(q + j, &qj, sizeof qj);
    std::memcpy(n + j, &nj, sizeof nj);
    std::memcpy(lo + j, &lj, sizeof lj);
    std::memcpy(hi + j, &hj, sizeof hj);
  }
  for (std::uint64_t j = whole; j < len; ++j) accumulate_one<A>(static_cast<double>(x[j]), j, shift, s, q, lo, hi, n);
}

LAZYCUBE_SIMD_CLONES void accumulate_f(const float* x, std::uint64_t len, double* shift, double* s, double* q,
                                       double* lo, double* hi, double* n) {
  accumulate_simd(x, len, shift, s, q, lo, hi, n);
}
LAZYCUBE_SIMD_CLONES void accumulate_f(const double* x, std::uint64_t len, double* shift, double* s, double* q,
                                       double* lo, double* hi, double* n) {
  accumulate_simd(x, len, shift, s, q, lo, hi, n);
}

template <class A>
void accumulate(const A* x, std::uint64_t len, std::uint64_t key, KeptSums& k) {
  double* shift = k.shift.data() + key;
  double* s = k.s.data() + key;
  double* q = k.q.data() + key;
  double* lo = k.lo.data() + key;
  double* hi = k.hi.data() + key;
  double* n = k.n.data() + key;
  if constexpr (std::is_floating_point_v<A>) {
    accumulate_f(x, len, shift, s, q, lo, hi, n);
  } else {
    for (std::uint64_t j = 0; j < len; ++j) accumulate_one<A>(static_cast<double>(x[j]), j, shift, s, q, lo, hi, n);
  }
}

// Block `w`'s segments (rows cut where their keys stop being consecutive, then at tile
// boundaries), appended to the buckets of their tiles in row order.
template <class A>
void block_segments(const Plan& p, const BlockWindow& w, const A* values, std::vector<std::vector<Segment<A>>>& buckets) {
  const std::size_t nd = p.shape.size();
  std::size_t g = nd - 1;  // dims [g, nd) kept, and all of (g, nd) whole in the block: consecutive keys
  while (g > 0 && p.kept[g - 1] && w.extent[g] == p.shape[g]) --g;
  std::uint64_t len = 1;
  for (std::size_t d = g; d < nd; ++d) len *= w.extent[d];
  std::uint64_t key = 0;
  for (std::size_t d = 0; d < nd; ++d) key += w.window[d].start * p.kept_stride[d];
  std::vector<std::uint64_t> idx(g, 0);
  const std::uint64_t rows = len == 0 ? 0 : w.n / len;
  for (std::uint64_t r = 0; r < rows; ++r) {
    const A* x = values + r * len;
    for (std::uint64_t at = key; at < key + len;) {
      const std::uint64_t tile = at / kTile;
      const std::uint64_t end = std::min(key + len, (tile + 1) * kTile);
      buckets[tile].push_back({x + (at - key), at, end - at});
      at = end;
    }
    for (std::size_t d = g; d-- > 0;) {  // next row
      key += p.kept_stride[d];
      if (++idx[d] < w.extent[d]) break;
      key -= p.kept_stride[d] * w.extent[d];
      idx[d] = 0;
    }
  }
}

// Adds `b` (sums of other values of the same keys) into `a`: b's sums re-centred on a's shift,
// S + n_b d and Q + 2 d S_b + n_b d^2 with d the difference of the shifts.
void merge_sums(KeptSums& a, const KeptSums& b) {
  for (std::size_t i = 0; i < a.n.size(); ++i) {
    const double nb = b.n[i];
    if (nb == 0) continue;
    if (a.n[i] == 0) {
      a.shift[i] = b.shift[i], a.s[i] = b.s[i], a.q[i] = b.q[i];
    } else {
      const double d = b.shift[i] - a.shift[i];
      a.q[i] += b.q[i] + 2.0 * d * b.s[i] + nb * d * d;
      a.s[i] += b.s[i] + nb * d;
    }
    a.n[i] += nb;
    a.lo[i] = std::min(a.lo[i], b.lo[i]);
    a.hi[i] = std::max(a.hi[i], b.hi[i]);
  }
}

// Up to this many keys, each block sums into sums of its own (in parallel; merged in block
// order), since a few tiles would leave threads idle; above it, tiles run in parallel.
constexpr std::uint64_t kPerBlockKeys = 4 * kTile;

template <class T>
void kept_trailing_pass(const Variable& variable, const Plan& p, std::uint64_t blocks, KeptSums& sums,
                        const std::function<void()>& block_done) {
  using A = AccOf<T>;
  const std::uint64_t block_bytes = std::max<std::uint64_t>(1, shape_size(p.block) * sizeof(T));
  const std::uint64_t threads = ThreadPool::global().size() + 1;
  const std::uint64_t wave = std::clamp(kWaveBytes / block_bytes, threads, 4 * threads + 4);
  const std::size_t slots = static_cast<std::size_t>(std::min(wave, blocks));
  const std::size_t tiles = (sums.n.size() + kTile - 1) / kTile;
  std::vector<std::vector<std::byte>> bytes(slots);
  std::vector<std::vector<float>> widened(slots);
  std::vector<BlockWindow> windows(slots);
  std::vector<const A*> values(slots);
  if (sums.n.size() <= kPerBlockKeys) {
    std::vector<KeptSums> local(slots, KeptSums(0));
    for (std::uint64_t first = 0; first < blocks; first += wave) {
      const std::uint64_t n = std::min(wave, blocks - first);
      parallel_for(n, [&](std::size_t i) {
        const BlockWindow w = block_window(p, first + i);
        const A* x = read_block<T>(variable, w, bytes[i], widened[i]);
        std::vector<std::vector<Segment<A>>> buckets(tiles);
        block_segments(p, w, x, buckets);
        local[i] = KeptSums(sums.n.size());
        for (const auto& bucket : buckets)
          for (const auto& seg : bucket) accumulate(seg.x, seg.len, seg.key, local[i]);
        if (block_done) block_done();
      });
      for (std::size_t i = 0; i < n; ++i) merge_sums(sums, local[i]);
    }
    return;
  }
  std::vector<std::vector<Segment<A>>> buckets(tiles);
  for (std::uint64_t first = 0; first < blocks; first += wave) {
    const std::uint64_t n = std::min(wave, blocks - first);
    parallel_for(n, [&](std::size_t i) {
      windows[i] = block_window(p, first + i);
      values[i] = read_block<T>(variable, windows[i], bytes[i], widened[i]);
      if (block_done) block_done();
    });
    for (auto& b : buckets) b.clear();
    for (std::size_t i = 0; i < n; ++i) block_segments(p, windows[i], values[i], buckets);
    parallel_for(buckets.size(), [&](std::size_t t) {
      for (const auto& seg : buckets[t]) accumulate(seg.x, seg.len, seg.key, sums);
    });
  }
}

std::vector<bool> kept_flags(const Variable& variable, const std::vector<std::string>& keep) {
  std::vector<bool> kept(variable.ndim(), false);
  for (const auto& dim : keep) {
    const auto it = std::find(variable.dims().begin(), variable.dims().end(), dim);
    if (it == variable.dims().end())
      throw SelectionError("stats: variable '" + variable.name() + "' has no dim '" + dim + "' (dims: " +
                           join_names(variable.dims()) + ")");
    kept[static_cast<std::size_t>(it - variable.dims().begin())] = true;
  }
  return kept;
}

}  // namespace

VariableStats compute_stats(const Variable& variable, const std::vector<std::string>& keep,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const DataType& t = variable.dtype();
  if (!has_stats_dtype(t))
    throw UsageError("stats: variable '" + variable.name() + "' has dtype " + t.name() +
                     "; statistics need bool, integers or floats");
  const Plan p = plan_of(variable, kept_flags(variable, keep));
  VariableStats out;
  out.name = variable.name();
  for (std::size_t d = 0; d < p.shape.size(); ++d)
    if (p.kept[d]) out.dims.push_back(variable.dims()[d]), out.shape.push_back(p.shape[d]);
  const std::uint64_t total = variable.size() * t.itemsize;
  std::uint64_t done = 0;
  std::mutex mutex;
  auto block_done = [&] {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(mutex);
    done = std::min(total, done + shape_size(p.block) * t.itemsize);
    progress(done, total);
  };
  const std::uint64_t blocks = variable.size() == 0 ? 0 : p.blocks;
  const std::size_t k = out.size();
  out.count.resize(k), out.nan_count.resize(k), out.mean.resize(k), out.std.resize(k), out.min.resize(k),
      out.max.resize(k);
  const std::size_t nd = p.shape.size();
  if (nd > 0 && p.kept[nd - 1]) {
    KeptSums sums(k);
    detail::visit_dtype<detail::dtype_set::kNumeric | detail::dtype_set::kHalf>(t, [&](auto tag) {
      using V = typename decltype(tag)::type;
      using T = std::conditional_t<std::is_same_v<V, bool>, std::uint8_t, V>;  // bool is one byte 0/1
      kept_trailing_pass<T>(variable, p, blocks, sums, block_done);
    });
    std::uint64_t per_key = 1;
    for (std::size_t d = 0; d < nd; ++d)
      if (!p.kept[d]) per_key *= p.shape[d];
    for (std::size_t i = 0; i < k; ++i) {
      const auto n = static_cast<std::uint64_t>(sums.n[i]);
      out.count[i] = n;
      out.nan_count[i] = per_key - n;
      const double dn = static_cast<double>(n), s = sums.s[i];
      const bool any = n > 0;
      out.mean[i] = any ? sums.shift[i] + s / dn : kNaN;
      out.std[i] = any ? std::sqrt(std::max(0.0, sums.q[i] - s * (s / dn)) / dn) : kNaN;
      out.min[i] = any ? sums.lo[i] : kNaN;
      out.max[i] = any ? sums.hi[i] : kNaN;
    }
    return out;
  }
  std::vector<Partial> global(k);
  // Blocks in waves, merged in block order after each: the same result on every run and with
  // any thread count (the blocks do not depend on it), with at most one wave of partials held.
  const std::uint64_t wave = 4 * ThreadPool::global().size() + 4;
  std::vector<BlockPartials> partials(static_cast<std::size_t>(std::min(wave, blocks)));
  BufferPool pool;
  detail::visit_dtype<detail::dtype_set::kNumeric | detail::dtype_set::kHalf>(t, [&](auto tag) {
    using V = typename decltype(tag)::type;
    using T = std::conditional_t<std::is_same_v<V, bool>, std::uint8_t, V>;  // bool is one byte 0/1
    for (std::uint64_t first = 0; first < blocks; first += wave) {
      const std::uint64_t n = std::min(wave, blocks - first);
      parallel_for(n, [&](std::size_t i) {
        partials[i] = block_partials<T>(variable, p, first + i, pool);
        block_done();
      });
      for (std::size_t i = 0; i < n; ++i)
        for (const auto& [key, part] : partials[i]) merge(global[key], part);
    }
  });
  for (std::size_t i = 0; i < k; ++i) {
    const Partial& g = global[i];
    out.count[i] = g.n;
    out.nan_count[i] = g.nan;
    const bool any = g.n > 0;
    out.mean[i] = any ? g.mean : kNaN;
    out.std[i] = any ? std::sqrt(g.m2 / static_cast<double>(g.n)) : kNaN;
    out.min[i] = any ? g.min : kNaN;
    out.max[i] = any ? g.max : kNaN;
  }
  return out;
}

namespace {

void check_dims(const Dataset& dataset, const std::vector<std::string>& dims) {
  for (const auto& dim : dims)
    if (!dataset.dim_size(dim)) {
      std::vector<std::string> names;
      for (const auto& d : dataset.dims()) names.push_back(d.first);
      throw SelectionError("stats: unknown dim '" + dim + "' (dims of the dataset: " + join_names(names) + ")");
    }
}

}  // namespace

std::vector<std::string> kept_dims(const Dataset& dataset, const std::vector<std::string>& reduced) {
  check_dims(dataset, reduced);
  std::vector<std::string> keep;
  for (const auto& d : dataset.dims())
    if (std::find(reduced.begin(), reduced.end(), d.first) == reduced.end()) keep.push_back(d.first);
  return keep;
}

std::vector<VariableStats> compute_stats(const Dataset& dataset, const StatsOptions& options) {
  check_dims(dataset, options.keep);
  std::vector<std::string> names = options.variables;
  if (names.empty())
    for (const auto& name : dataset.data_var_names())
      if (has_stats_dtype(dataset.variable(name).dtype())) names.push_back(name);
  std::vector<Variable> variables;
  std::uint64_t total = 0;
  for (const auto& name : names) {
    variables.push_back(dataset.variable(name));
    total += variables.back().size() * variables.back().dtype().itemsize;
  }
  std::vector<VariableStats> out;
  std::uint64_t before = 0;
  for (const auto& v : variables) {
    std::vector<std::string> keep;
    for (const auto& dim : options.keep)
      if (v.has_dim(dim)) keep.push_back(dim);
    std::function<void(std::uint64_t, std::uint64_t)> progress;
    if (options.progress)
      progress = [&](std::uint64_t done, std::uint64_t) { options.progress(before + done, total); };
    out.push_back(compute_stats(v, keep, progress));
    before += v.size() * v.dtype().itemsize;
  }
  return out;
}

}  // namespace lazycube
