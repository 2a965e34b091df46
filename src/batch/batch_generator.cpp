// BatchGenerator: epoch order, batch planning (with the validity filter), the prefetch
// thread and resumable state. What a batch holds and how it is assembled: batch_source.cpp.
#include "lazycube/batch/batch_generator.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "batch_source.hpp"
#include "fetch_ahead.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::batch {

namespace {
constexpr int kStateVersion = 1;
// Batches assembled at once at most (each on its own thread): a larger prefetch queues the
// rest, as each of these threads mostly waits on chunk loads the pool does.
constexpr std::size_t kMaxAssemblers = 16;
}  // namespace

// Not in the anonymous namespace: BatchGenerator::Impl, a class with external linkage, holds
// one (GCC's -Wsubobject-linkage, which the unity build makes it report).
// Decoding a chunk makes short-lived heap allocations (codec temporaries) between long-lived
// small ones (cache bookkeeping); glibc keeps the freed pages between them, and over an epoch
// of cache misses that grew the process ~170 MB past the cache budget. Returning them keeps
// peak RSS near budget + what is in flight. Not after every batch, though: a trim walks the
// whole heap and the pages it returns fault back in on reuse, which cost ~25 % of batch
// throughput when done per batch (more in a process with a big heap, e.g. Python + torch).
// Once per kTrimEvery bytes of chunks fetched on cache misses bounds the growth the same way
// at a fraction of the cost. Batches themselves are not heap churn: big buffers come from
// their own pool of mappings (util/buffer.cpp) and small ones are reused at the same sizes;
// counting them made every epoch trim ~5 times from the cache alone, 6-13 % of a warm epoch.
class HeapTrimmer {
 public:
  void after_batch(const ChunkCache& cache) {
#ifdef __GLIBC__
    const std::uint64_t fetched = cache.stats().bytes_fetched;
    churn_ += fetched >= last_fetched_ ? fetched - last_fetched_ : 0;
    last_fetched_ = fetched;
    if (churn_ < kTrimEvery) return;
    churn_ = 0;
    ::malloc_trim(0);
#else
    (void)cache;
#endif
  }

 private:
  static constexpr std::uint64_t kTrimEvery = std::uint64_t{64} << 20;
  std::uint64_t churn_ = 0;
  std::uint64_t last_fetched_ = 0;
};

std::uint64_t Batch::nbytes() const {
  std::uint64_t n = target ? target->nbytes : 0;
  for (const auto& a : arrays) n += a.nbytes;
  return n;
}

struct BatchGenerator::Impl {
  BatchSource source;

  std::uint64_t epoch = 0;
  std::optional<EpochOrder> order;  // empty when there is nothing to visit
  std::optional<WindowReads> reads;  // what fetch-ahead walks: the windows of `order`
  std::uint64_t position = 0;       // shard position where the next batch starts
  std::uint64_t index = 0;          // number of the next batch
  // Brings the chunks of the coming windows into the cache ahead of the assembly; runs
  // while batches are produced (stopped with the producer, before `order` changes).
  FetchAhead fetch{source.cache(), source.fetch_ahead_bytes(), source.fetch_ahead_most_bytes()};
  bool fetching = false;
  // Used by the one thread that assembles batches at a time (the producer, or the caller
  // with prefetch 0).
  HeapTrimmer trimmer;

  // What a planned batch covers: the shard positions [begin, end) it consumed and the
  // windows (grid numbers) it holds, or none at the end of the epoch.
  struct Plan {
    std::uint64_t begin = 0, end = 0;
    std::vector<std::uint64_t> ids;
  };
  // A planned batch, from when it is planned until the caller takes it; `done` once it is
  // assembled (or failed), or at once when it marks the end of the epoch.
  struct Slot {
    std::uint64_t index = 0;
    std::optional<Plan> plan;
    std::optional<Batch> batch;
    std::exception_ptr error;
    bool done = false;
  };
  using SlotPtr = std::shared_ptr<Slot>;
  // The producer plans batches in order (planning with a validity filter depends on where the
  // last batch ended) and hands each to one of up to `prefetch` assembler threads, so that a
  // batch waiting on a slow chunk (a retry waiting out Retry-After or a backoff) does not hold
  // back the assembly of the batches after it whose chunks are in. The caller still receives
  // them in order; at most `prefetch` batches exist at once (planned, assembling or ready).
  std::thread producer;
  std::vector<std::thread> assemblers;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<SlotPtr> ready;   // every slot not yet taken by the caller, in batch order
  std::deque<SlotPtr> jobs;    // planned slots no assembler has taken yet
  bool stopping = false;
  bool running = false;

  Impl(Dataset ds, BatchOptions opt) : source(std::move(ds), std::move(opt)) {
    if (source.options().resume) make_order(source.options().resume->epoch);  // checks its stretches now
    make_order(0);
  }
  ~Impl() { stop_producer(); }

  void make_order(std::uint64_t e) {
    epoch = e;
    position = 0;
    index = 0;
    order.reset();
    if (source.units() == 0) return;
    order.emplace(order_of(e));
  }

  // Epoch e's order (a resumed epoch: its remaining stretches, planned as the job that began it
  // planned it), cut to this shard's even block of the positions it visits.
  EpochOrder order_of(std::uint64_t e) const {
    const BatchOptions& o = source.options();
    std::shared_ptr<const std::vector<PositionRange>> remaining;
    std::uint64_t shards = o.shard.count(), to_visit = source.units();
    BlockPlan blocks;
    if (o.resume && o.resume->epoch == e) {
      remaining = std::make_shared<const std::vector<PositionRange>>(o.resume->remaining);
      to_visit = 0;
      for (const PositionRange& r : *remaining) to_visit += r.end >= r.begin ? r.end - r.begin : 0;
      if (o.resume->planned_world_size > 0)
        shards = std::uint64_t{o.resume->planned_world_size} * std::max<std::uint32_t>(o.resume->planned_num_workers, 1);
      blocks = o.resume->blocks;
    }
    const std::vector<std::uint64_t> starts = even_shard_starts(to_visit, o.shard.count());
    const std::uint64_t i = o.shard.index();
    return EpochOrder(source.order_grid(), o.shuffle, o.seed, e, source.planning(shards, blocks), {starts[i], starts[i + 1]},
                      std::move(remaining));
  }

  std::uint64_t shard_units() const { return order ? order->size() : 0; }

  std::uint64_t batches() const {
    const std::uint64_t n = shard_units();
    if (!source.stacked()) return n;
    const std::uint64_t bs = source.options().batch_size;
    return source.options().drop_last ? n / bs : (n + bs - 1) / bs;
  }

  // The next batch starting at shard position `from` of `ord`; nullopt at the end of the epoch.
  std::optional<Plan> plan_from(const std::optional<EpochOrder>& ord, std::uint64_t from) const {
    const std::uint64_t n = ord ? ord->size() : 0;
    if (from >= n) return std::nullopt;
    if (!source.stacked()) return Plan{from, from + 1, {ord->window(from)}};
    const BatchOptions& o = source.options();
    const std::uint64_t bs = o.batch_size;
    Plan p;
    p.begin = from;
    if (!source.has_filter()) {
      p.end = std::min(n, from + bs);
      for (std::uint64_t q = from; q < p.end; ++q) p.ids.push_back(ord->window(q));
    } else {
      // Evaluate candidates in parallel, a block at a time, until the batch is full.
      std::uint64_t q = from;
      while (p.ids.size() < bs && q < n) {
        const std::uint64_t block = std::min<std::uint64_t>(n - q, std::max<std::uint64_t>(bs - p.ids.size(), 8));
        std::vector<std::uint64_t> ids(block);
        std::vector<char> ok(block, 0);
        parallel_for(block, [&](std::size_t k) {
          ids[k] = ord->window(q + k);
          ok[k] = source.window_passes(ids[k]) ? 1 : 0;
        });
        std::uint64_t k = 0;
        for (; k < block && p.ids.size() < bs; ++k)
          if (ok[k]) p.ids.push_back(ids[k]);
        q += k;  // candidates after the batch's last window are evaluated again next time
      }
      p.end = q;
    }
    if (p.ids.empty() || (o.drop_last && p.ids.size() < bs)) return std::nullopt;
    return p;
  }

  Batch assemble(const Plan& p, std::uint64_t e, std::uint64_t i) const {
    Batch b = source.stacked() ? source.assemble_windows(p.ids) : source.assemble_xbatcher(p.ids.front());
    b.epoch = e;
    b.index = i;
    return b;
  }

  void start_fetch() {
    if (fetching || !order) return;
    reads.emplace(source, *order);
    fetch.start(*reads, position);
    fetching = true;
  }

  // An assembler thread: assembles the planned slots it takes until the producer stops.
  void assemble_jobs(std::uint64_t e) {
    for (;;) {
      SlotPtr s;
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) return;
        s = std::move(jobs.front());
        jobs.pop_front();
      }
      std::optional<Batch> batch;
      std::exception_ptr error;
      try {
        batch = assemble(*s->plan, e, s->index);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        s->batch = std::move(batch);
        s->error = error;
        s->done = true;
      }
      cv.notify_all();
    }
  }

  void start_producer() {
    start_fetch();
    stopping = false;
    running = true;
    const std::size_t depth = source.options().prefetch;
    producer = std::thread([this, depth, pos = position, idx = index, e = epoch]() mutable {
      // Slots planned and not yet counted as assembled, in order: when the first of them is
      // done, every window before its end has been assembled, which is what fetch-ahead's
      // holds wait for.
      std::deque<SlotPtr> pending;
      bool planning = true;
      try {
        for (std::size_t k = 0; k < std::min(depth, kMaxAssemblers); ++k)
          assemblers.emplace_back([this, e] { assemble_jobs(e); });
      } catch (...) {
        if (assemblers.empty()) {  // no thread at all: the next batch reports why
          auto s = std::make_shared<Slot>();
          s->index = idx;
          s->error = std::current_exception();
          s->done = true;
          planning = false;
          {
            std::lock_guard lock(mutex);
            ready.push_back(std::move(s));
          }
          cv.notify_all();
        }
      }
      for (;;) {
        std::uint64_t assembled_to = 0;
        bool advanced = false;
        {
          std::unique_lock lock(mutex);
          cv.wait(lock, [&] {
            return stopping || (planning && ready.size() < depth) || (!pending.empty() && pending.front()->done) ||
                   (!planning && pending.empty());
          });
          if (stopping || (!planning && pending.empty())) break;
          while (!pending.empty() && pending.front()->done) {
            if (pending.front()->error) {  // the caller stops us when it reaches it
              planning = false;
              pending.clear();
              break;
            }
            assembled_to = pending.front()->plan->end;
            advanced = true;
            pending.pop_front();
          }
        }
        if (advanced) {
          fetch.consumed(assembled_to);
          trimmer.after_batch(*source.cache());
          continue;
        }
        if (!planning) continue;
        {
          std::lock_guard lock(mutex);
          if (ready.size() >= depth) continue;
        }
        auto s = std::make_shared<Slot>();
        s->index = idx++;
        try {
          s->plan = plan_from(order, pos);
        } catch (...) {
          s->error = std::current_exception();
        }
        {
          std::lock_guard lock(mutex);
          ready.push_back(s);
          if (s->plan && !s->error) {
            pos = s->plan->end;
            pending.push_back(s);
            jobs.push_back(std::move(s));
          } else {
            s->done = true;  // the end of the epoch, or a failed plan: nothing after it
            planning = false;
          }
        }
        cv.notify_all();
      }
      {
        std::lock_guard lock(mutex);
        stopping = true;  // the assemblers finish the batch in hand and return
      }
      cv.notify_all();
      for (auto& t : assemblers) t.join();
      assemblers.clear();
    });
  }

  void stop_producer() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    cv.notify_all();
    if (producer.joinable()) producer.join();
    fetch.stop();
    fetching = false;
    ready.clear();
    jobs.clear();
    running = false;
    stopping = false;
  }

  std::optional<Batch> next() {
    if (source.options().prefetch == 0) {
      start_fetch();
      auto p = plan_from(order, position);
      if (!p) {
        stop_producer();
        return std::nullopt;
      }
      Batch b = assemble(*p, epoch, index);
      trimmer.after_batch(*source.cache());
      position = p->end;
      fetch.consumed(position);
      ++index;
      return b;
    }
    if (!running) start_producer();
    SlotPtr taken;
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return !ready.empty() && ready.front()->done; });
      taken = std::move(ready.front());
      ready.pop_front();
    }
    cv.notify_all();
    Slot& s = *taken;
    if (s.error || !s.plan) {
      // The producer stops planning after this slot; the next call starts it again from the
      // unchanged position (so a failed batch is retried, and the end stays the end).
      stop_producer();
      if (s.error) std::rethrow_exception(s.error);
      return std::nullopt;
    }
    position = s.plan->end;
    index = s.index + 1;
    return std::move(s.batch);
  }
};

BatchGenerator::BatchGenerator(Dataset dataset, BatchOptions options)
    : impl_(std::make_unique<Impl>(std::move(dataset), std::move(options))) {}

BatchGenerator::~BatchGenerator() = default;

const BatchOptions& BatchGenerator::options() const { return impl_->source.options(); }
const Dataset& BatchGenerator::dataset() const { return impl_->source.dataset(); }
const WindowGrid& BatchGenerator::grid() const {
  if (!impl_->source.stacked()) throw UsageError("grid(): the generator is in xbatcher-compatibility mode (batch_size 0)");
  return impl_->source.grid();
}
const XbatcherSchema& BatchGenerator::schema() const {
  if (impl_->source.stacked()) throw UsageError("schema(): the generator is in stacked mode (batch_size > 0)");
  return impl_->source.schema();
}
std::uint64_t BatchGenerator::total_windows() const { return impl_->source.units(); }
std::uint64_t BatchGenerator::shard_windows() const { return impl_->shard_units(); }
std::uint64_t BatchGenerator::size() const { return impl_->batches(); }
const std::shared_ptr<ChunkCache>& BatchGenerator::cache() const { return impl_->source.cache(); }
const std::vector<std::string>& BatchGenerator::warnings() const { return impl_->source.warnings(); }
std::uint64_t BatchGenerator::fetch_ahead_bytes() const { return impl_->fetch.budget(); }

std::optional<BlockPlan> BatchGenerator::block_plan(std::uint32_t world_size, std::uint32_t num_workers) const {
  const BatchSource& s = impl_->source;
  if (!s.footprint() || !(s.options().shuffle == Shuffle::Chunk)) return std::nullopt;
  ShardSpec{0, world_size, 0, num_workers}.validate();
  return s.planning(std::uint64_t{world_size} * num_workers).blocks;
}

Batch BatchGenerator::batch(std::uint64_t i, std::uint64_t epoch) const {
  Impl& m = *impl_;
  if (m.source.has_filter())
    throw UsageError("batch(i) is not available with a validity filter: which windows form batch i depends on "
                     "the data; iterate with next()");
  if (i >= m.batches())
    throw UsageError("batch index " + std::to_string(i) + " out of range: this shard has " +
                     std::to_string(m.batches()) + " batches per epoch");
  std::optional<EpochOrder> other;
  const std::optional<EpochOrder>* ord = &m.order;
  if (epoch != m.epoch) {
    other.emplace(m.order_of(epoch));
    ord = &other;
  }
  const std::uint64_t per = m.source.stacked() ? m.source.options().batch_size : 1;
  auto plan = m.plan_from(*ord, i * per);
  return m.assemble(*plan, epoch, i);
}

std::optional<Batch> BatchGenerator::next() { return impl_->next(); }

void BatchGenerator::set_epoch(std::uint64_t epoch) {
  impl_->stop_producer();
  impl_->make_order(epoch);
}

std::uint64_t BatchGenerator::epoch() const { return impl_->epoch; }

nlohmann::json BatchGenerator::state() const {
  return {{"version", kStateVersion},
          {"epoch", impl_->epoch},
          {"position", impl_->position},
          {"batch", impl_->index},
          {"config", impl_->source.config()}};
}

void BatchGenerator::restore(const nlohmann::json& state) {
  Impl& m = *impl_;
  if (!state.is_object() || state.value("version", 0) != kStateVersion || !state.contains("config") ||
      !state.contains("epoch") || !state.contains("position") || !state.contains("batch"))
    throw UsageError("restore: not a BatchGenerator state (expected an object with version " +
                     std::to_string(kStateVersion) + ", epoch, position, batch and config)");
  const nlohmann::json& config = state["config"];
  if (config != m.source.config()) {
    std::string which;
    for (const auto& [key, value] : m.source.config().items())
      if (!config.contains(key) || config[key] != value) which += (which.empty() ? "" : ", ") + key;
    throw UsageError("restore: the state belongs to another configuration (differs in: " +
                     (which.empty() ? std::string("extra keys") : which) + ")");
  }
  const auto position = state["position"].get<std::uint64_t>();
  m.stop_producer();
  m.make_order(state["epoch"].get<std::uint64_t>());
  if (position > m.shard_units())
    throw UsageError("restore: position " + std::to_string(position) + " is past the end of the epoch (" +
                     std::to_string(m.shard_units()) + " windows)");
  m.position = position;
  m.index = state["batch"].get<std::uint64_t>();
}

}  // namespace lazycube::batch
