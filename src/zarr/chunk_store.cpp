#include "chunk_store.hpp"

#include "metadata_keys.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lazycube::zarr {

namespace {

class SplitChunkStore final : public Store {
 public:
  SplitChunkStore(std::shared_ptr<Store> metadata, std::shared_ptr<Store> chunks)
      : metadata_(std::move(metadata)), chunks_(std::move(chunks)) {}

  std::string url() const override { return metadata_->url() + " (chunks: " + chunks_->url() + ")"; }
  std::optional<Buffer> get(std::string_view key, ByteRange range) override { return of(key).get(key, range); }
  bool get_into(std::string_view key, ByteRange range, Buffer& out) override { return of(key).get_into(key, range, out); }
  bool read_into(const ByteRequest& request, Buffer& out) override { return of(request.key).read_into(request, out); }
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    std::vector<ByteRequest> part[2];
    std::vector<std::size_t> index[2];
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const int c = is_metadata_key(requests[i].key) ? 0 : 1;
      part[c].push_back(requests[i]);
      index[c].push_back(i);
    }
    Store* stores[2] = {metadata_.get(), chunks_.get()};
    for (int c = 0; c < 2; ++c)
      if (!part[c].empty())
        stores[c]->get_each(part[c], [&, c](std::size_t i, std::optional<Buffer>&& bytes) { sink(index[c][i], std::move(bytes)); });
  }
  std::optional<std::uint64_t> size(std::string_view key) override { return of(key).size(key); }
  ObjectVersion version(std::string_view key) override { return of(key).version(key); }
  std::vector<std::string> list(std::string_view prefix) override { return metadata_->list(prefix); }
  std::vector<std::string> list_dir(std::string_view prefix) override { return metadata_->list_dir(prefix); }
  bool prefers_batches() const override { return chunks_->prefers_batches(); }
  StoreStats stats() const override { return chunks_->stats(); }

 private:
  Store& of(std::string_view key) const { return is_metadata_key(key) ? *metadata_ : *chunks_; }

  std::shared_ptr<Store> metadata_, chunks_;
};

}  // namespace

std::shared_ptr<Store> split_chunk_store(std::shared_ptr<Store> metadata, std::shared_ptr<Store> chunks) {
  return std::make_shared<SplitChunkStore>(std::move(metadata), std::move(chunks));
}

}  // namespace lazycube::zarr
