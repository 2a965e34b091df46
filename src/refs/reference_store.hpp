// The kerchunk reference store: Zarr keys served as inline bytes or byte ranges of target
// files, read through the target URLs' own stores (so remote targets use the fetch engine's
// parallel, coalescing, retrying requests).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::refs {

// A reference store over the JSON text `json` read from `url` (a local path or an absolute
// URL). `options` minus allowed_prefixes go to the target stores.
std::shared_ptr<Store> make_reference_store_from_json(std::string_view json, const std::string& url,
                                                      const StoreOptions& options);

}  // namespace lazycube::refs
