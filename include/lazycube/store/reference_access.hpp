// Which targets a kerchunk reference set may read. Targets are normalised URLs (scheme,
// authority, path components); a target is allowed when it lies under an allowed prefix, on
// component boundaries. Default: the reference file's own directory (same scheme and host or
// bucket). Local targets are also checked after resolving symlinks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::refs {

// Storage option naming extra prefixes the targets may lie under (AccessPolicy below); only
// reference sets read it.
inline constexpr std::string_view kAllowedPrefixesOption = "allowed_prefixes";

// `options` without allowed_prefixes (for the stores that hold the reference file and the targets).
StoreOptions without_reference_options(const StoreOptions& options);

struct TargetUrl {
  std::string scheme;             // "file", "http", "https", "s3", "gs"
  std::string authority;          // host[:port] or bucket; "" for file
  std::vector<std::string> path;  // normalised components (no "", ".", "..")

  bool is_local() const { return scheme == "file"; }
  // Canonical text: "/a/b" for files, "scheme://authority/a/b" otherwise.
  std::string str() const;
  // The parent directory (drops the last component).
  TargetUrl parent() const;
};

// Parses an absolute URL or local path: percent-decodes remote paths and file:// URLs, resolves
// "." and "..", drops empty components. StoreError (naming `what`) on a NUL byte, an unsupported
// scheme, a ".." above the root, or a relative path.
TargetUrl parse_absolute(std::string_view url, const std::string& what);

// Resolves a target as written in a reference file: absolute URLs and local paths as they are,
// relative ones against `base_dir` (the reference file's directory).
TargetUrl resolve_target(std::string_view target, const TargetUrl& base_dir, const std::string& what);

class AccessPolicy {
 public:
  // `reference_dir`: the reference file's directory (the default allowed prefix).
  // `allowed_prefixes`: the storage option (entries separated by commas or whitespace, or a JSON
  // list of strings: parse_list_option, a UsageError naming the option when it does not parse;
  // "*" allows everything). Relative local prefixes resolve against the working directory.
  AccessPolicy(const TargetUrl& reference_dir, std::string_view allowed_prefixes);

  // The target to open when `target` is allowed for `key` (local targets: the real path, symlinks
  // resolved); otherwise a StoreError naming the key, the target and the allowed prefixes. A
  // local target that does not exist is a StoreError too.
  TargetUrl check(const TargetUrl& target, std::string_view key) const;

  // "a, b" list of the allowed prefixes for messages.
  std::string describe() const;

 private:
  bool allow_all_ = false;
  std::vector<TargetUrl> prefixes_;
};

}  // namespace lazycube::refs
