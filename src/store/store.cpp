#include "lazycube/store/store.hpp"

#include <atomic>
#include <ctime>

#include "lazycube/store/byte_range.hpp"
#include "lazycube/error.hpp"

namespace lazycube {

namespace {
std::atomic<std::uint64_t> next_store_id{1};
}

Store::Store() : id_(next_store_id.fetch_add(1)) {}

void Store::get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) {
  for (const auto& r : requests)
    if (!r.condition.empty())
      throw StoreError(describe(r.key) + ": this store cannot check that the object is unchanged (" +
                       r.condition.describe() + ")");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto bytes = get(requests[i].key, requests[i].range);
    if (bytes) detail::check_read_bound(bytes->size(), requests[i].max_bytes, describe(requests[i].key));
    sink(i, std::move(bytes));
  }
}

bool Store::read_into(const ByteRequest& request, Buffer& out) {
  auto got = get_many({request});
  if (!got[0]) return false;
  out = std::move(*got[0]);
  return true;
}

std::string ReadCondition::describe() const {
  std::string out;
  if (!etag.empty()) out = "ETag " + etag;
  if (unmodified_since != 0) {
    const std::time_t t = static_cast<std::time_t>(unmodified_since);
    std::tm tm{};
    char text[32] = "?";
    if (::gmtime_r(&t, &tm)) std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    out += (out.empty() ? "" : ", ") + std::string("not modified after ") + text;
  }
  return out.empty() ? "no condition" : out;
}

std::vector<std::optional<Buffer>> Store::get_many(const std::vector<ByteRequest>& requests) {
  std::vector<std::optional<Buffer>> out(requests.size());
  get_each(requests, [&](std::size_t i, std::optional<Buffer>&& bytes) { out[i] = std::move(bytes); });
  return out;
}

bool Store::get_into(std::string_view key, ByteRange range, Buffer& out) {
  auto bytes = get(key, range);
  if (!bytes) return false;
  out = std::move(*bytes);
  return true;
}

void Store::put(std::string_view key, ByteView) {
  throw StoreError(url() + " is read-only: cannot write '" + std::string(key) + "'");
}

void Store::remove(std::string_view key) {
  throw StoreError(url() + " is read-only: cannot remove '" + std::string(key) + "'");
}

std::string Store::describe(std::string_view key) const {
  std::string u = url();
  if (key.empty()) return u;
  if (!u.empty() && u.back() != '/') u += '/';
  return u + std::string(key);
}

std::string ByteRange::describe() const {
  switch (kind) {
    case Kind::Full: return "whole object";
    case Kind::Range:
      return "bytes " + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
    case Kind::Offset: return "bytes " + std::to_string(offset) + "-";
    case Kind::Suffix: return "last " + std::to_string(length) + " bytes";
  }
  return "?";
}

}  // namespace lazycube
