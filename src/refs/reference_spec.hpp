// Kerchunk reference sets (JSON, versions 0 and 1): parsed into a key -> entry table. Each entry
// is inline bytes or a byte range of a target URL; `templates` are substituted into URLs and
// `gen` entries are expanded when parsing (bounded by kMaxGeneratedKeys).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lazycube::refs {

struct ReferenceEntry {
  static constexpr std::uint32_t kInline = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint64_t kWholeObject = std::numeric_limits<std::uint64_t>::max();
  std::uint32_t target = kInline;  // index into ReferenceSet::targets, kInline for inline data
  std::uint64_t offset = 0;
  std::uint64_t length = kWholeObject;  // kWholeObject: `[url]`, the whole target
  std::string data;                     // inline bytes (base64 already decoded)

  bool is_inline() const { return target == kInline; }
};

struct ReferenceSet {
  std::vector<std::string> targets;  // distinct target URLs as written (templates substituted)
  std::map<std::string, ReferenceEntry, std::less<>> entries;
};

// Upper bound on the keys one `gen` entry may produce (a guard against hostile files).
inline constexpr std::uint64_t kMaxGeneratedKeys = 50'000'000;

// Parses kerchunk JSON. `where` names the file in messages. Malformed input is a MetadataError
// naming the key (or the part of the file) that is wrong.
ReferenceSet parse_reference_set(std::string_view json, const std::string& where);

// True when `json` parses as a JSON object that is a kerchunk reference set: it has "refs"
// (version 1) or is a version-0 key map holding ".zgroup", ".zattrs" or ".zarray" keys.
bool is_reference_set(std::string_view json);

// Evaluates a `gen` expression such as "{{ (i + 1) * 1000 }}" or "u_{{i}}.nc" with integer
// variables; names found in `strings` are substituted as text. MetadataError naming `what` on a
// syntax error or an unknown name. Exposed for tests.
std::string render_template(std::string_view text, const std::map<std::string, std::int64_t>& ints,
                            const std::map<std::string, std::string>& strings, const std::string& what);

}  // namespace lazycube::refs
