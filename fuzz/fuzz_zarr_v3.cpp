// Zarr v3 zarr.json (arrays with their codec chains, sharding included; groups with inline
// consolidated metadata), opened through zarr::Hierarchy from a memory store, then the start of
// each array read: fill values, and the first chunk's (or shard's) bytes through the chain.
//
// Input: one selector byte, then the zarr.json document, then optionally NUL and the first
// chunk's bytes (stored under every key a first chunk may have).
//   selector % 2 == 0: open without consolidated metadata; 1: require it
#include "zarr_read.hpp"

using namespace lazycube;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const bool consolidated = in.byte() % 2 == 1;
  const auto parts = in.split_at_nul();
  const std::string_view doc = parts.first, chunk = parts.second;  // (lambdas capture them: no binding)
  auto store = make_memory_store();
  store->set("zarr.json", doc);
  fuzz::put_first_chunk(*store, "", chunk);
  fuzz::typed_or_valid([&] {
    const auto h = zarr::Hierarchy::open({store, ""}, consolidated ? std::optional<bool>(true) : std::nullopt);
    (void)h.attrs().dump();
    for (const auto& name : h.array_names()) {
      if (!name.empty() && !chunk.empty()) fuzz::put_first_chunk(*store, name, chunk);
      fuzz::typed_or_valid([&] {
        const ArrayPtr array = h.array(name);
        (void)array->codecs_json().dump();
        fuzz::read_start(*array);
      });
    }
  });
  return 0;
}
