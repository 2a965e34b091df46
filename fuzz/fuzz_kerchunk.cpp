// Kerchunk reference sets (JSON versions 0 and 1, templates and `gen` entries) through the
// reader's parse_reference_set, and the sniff that decides whether a .json URL is one.
#include "refs/reference_spec.hpp"
#include "fuzz_common.hpp"

using namespace lazycube;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)refs::is_reference_set(text);
  fuzz::typed_or_valid([&] {
    const refs::ReferenceSet set = refs::parse_reference_set(text, "fuzz.json");
    for (const auto& [key, entry] : set.entries)
      fuzz::check(entry.is_inline() || entry.target < set.targets.size(),
                  "reference '" + key + "' names target " + std::to_string(entry.target) + " of " +
                      std::to_string(set.targets.size()));
  });
  return 0;
}
