// Zarr v2 metadata: .zarray, .zattrs, .zmetadata (consolidated), opened through zarr::Hierarchy
// from a memory store, then the start of each array read (fill values, and one chunk's bytes
// through the v2 compressor and filters).
//
// Input: one selector byte, then a JSON document, then optionally NUL and the first chunk's bytes.
//   selector % 3 == 0: the document is the root's .zarray
//                   1: the root's .zattrs (beside .zgroup {"zarr_format": 2})
//                   2: the root's .zmetadata (beside .zgroup), opened consolidated
#include "zarr_read.hpp"

using namespace lazycube;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 3;
  const auto parts = in.split_at_nul();
  const std::string_view doc = parts.first, chunk = parts.second;  // (lambdas capture them: no binding)
  auto store = make_memory_store();
  if (mode == 0) {
    store->set(".zarray", doc);
    fuzz::put_first_chunk(*store, "", chunk);
  } else {
    store->set(".zgroup", std::string_view(R"({"zarr_format": 2})"));
    store->set(mode == 1 ? ".zattrs" : ".zmetadata", doc);
  }
  fuzz::typed_or_valid([&] {
    const auto h = zarr::Hierarchy::open({store, ""}, mode == 2 ? std::optional<bool>(true) : std::nullopt);
    (void)h.attrs().dump();
    for (const auto& name : h.array_names()) {
      if (mode == 2 && !chunk.empty()) fuzz::put_first_chunk(*store, name, chunk);
      fuzz::typed_or_valid([&] {
        const ArrayPtr array = h.array(name);
        (void)array->codecs_json().dump();
        fuzz::read_start(*array);
      });
    }
  });
  return 0;
}
