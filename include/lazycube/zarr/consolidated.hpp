// Whether opening fell back from absent consolidated metadata: the one fact the Python engine
// needs to warn as xarray's zarr engine does ("Failed to open Zarr store with consolidated
// metadata, but successfully read with non-consolidated metadata ...").
#pragma once

#include <cstdint>

namespace lazycube::zarr {

// How many Zarr v2 groups this thread has opened with consolidated=nullopt (use it when present)
// that had no .zmetadata -- neither at the group nor at the store's root -- and were read by
// listing instead. Compare the count before and after an open. Zarr v3 (and so Icechunk), an
// explicit consolidated=true/false and a single array never count.
std::uint64_t unconsolidated_fallbacks_on_this_thread();

}  // namespace lazycube::zarr
