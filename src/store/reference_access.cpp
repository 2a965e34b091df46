#include "lazycube/store/reference_access.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "backend_registry.hpp"
#include "lazycube/error.hpp"
#include "storage_options.hpp"
#include "url_scheme.hpp"

namespace lazycube::refs {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw StoreError("kerchunk reference " + what + ": " + why);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, const std::string& what) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) refuse(what, "bad percent-encoding in '" + std::string(s) + "'");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Splits on '/', dropping "" and "."; ".." removes the previous component (never above the root).
std::vector<std::string> normalise(std::string_view path, const std::string& what, std::vector<std::string> base = {}) {
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(pos, slash - pos);
    if (part == "..") {
      if (base.empty()) refuse(what, "'" + std::string(path) + "' climbs above the root with '..'");
      base.pop_back();
    } else if (!part.empty() && part != ".") {
      base.emplace_back(part);
    }
    pos = slash + 1;
  }
  return base;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check_no_nul(std::string_view s, const std::string& what) {
  if (s.find('\0') != std::string_view::npos) refuse(what, "the URL holds a NUL byte");
}

bool under(const TargetUrl& t, const TargetUrl& prefix) {
  if (t.scheme != prefix.scheme || t.authority != prefix.authority) return false;
  if (t.path.size() < prefix.path.size()) return false;
  for (std::size_t i = 0; i < prefix.path.size(); ++i)
    if (t.path[i] != prefix.path[i]) return false;
  return true;
}

// The real path of a local file or directory (symlinks resolved) into `out`; false if it does not exist.
bool real_path(const TargetUrl& t, TargetUrl& out) {
  std::unique_ptr<char, decltype(&std::free)> r(::realpath(t.str().c_str(), nullptr), &std::free);
  if (!r) return false;
  out = TargetUrl{"file", "", normalise(r.get(), "real path")};
  return true;
}

}  // namespace

std::string TargetUrl::str() const {
  std::string out = is_local() ? "" : scheme + "://" + authority;
  for (const auto& p : path) out += "/" + p;
  if (path.empty()) out += "/";
  return out;
}

TargetUrl TargetUrl::parent() const {
  TargetUrl p = *this;
  if (!p.path.empty()) p.path.pop_back();
  return p;
}

TargetUrl parse_absolute(std::string_view url, const std::string& what) {
  check_no_nul(url, what);
  const ParsedUrl parsed = parse_url_scheme(url);
  if (parsed.is_plain_path()) {
    if (url.empty() || url.front() != '/') refuse(what, "'" + std::string(url) + "' is not an absolute path or URL");
    return {"file", "", normalise(url, what)};
  }
  if (!parsed.is_local() && !parsed.is_remote())
    refuse(what, "unsupported scheme '" + parsed.scheme + "' in '" + std::string(url) + "' (targets may be " +
                     registered_schemes_text() + " URLs)");
  const std::string& scheme = parsed.scheme;
  const std::string_view rest = parsed.rest;
  const std::size_t slash = rest.find('/');
  std::string authority = lower(std::string(rest.substr(0, slash)));
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  // Query strings and fragments would change what the server returns: not part of a target.
  if (path.find_first_of("?#") != std::string_view::npos || authority.find_first_of("?#") != std::string::npos)
    refuse(what, "query strings and fragments are not supported in targets: '" + std::string(url) + "'");
  const std::string decoded = percent_decode(path, what);
  check_no_nul(decoded, what);
  if (scheme == "file") {
    if (!authority.empty() && authority != "localhost")
      refuse(what, "file:// URL names host '" + authority + "' (only local files are read)");
    return {"file", "", normalise(decoded, what)};
  }
  if (authority.empty()) refuse(what, "no host or bucket in '" + std::string(url) + "'");
  if (authority.find_first_of("@\\") != std::string::npos)
    refuse(what, "user names and backslashes are not allowed in the host of '" + std::string(url) + "'");
  return {scheme, authority, normalise(decoded, what)};
}

TargetUrl resolve_target(std::string_view target, const TargetUrl& base_dir, const std::string& what) {
  check_no_nul(target, what);
  if (!parse_url_scheme(target).is_plain_path() || (!target.empty() && target.front() == '/'))
    return parse_absolute(target, what);
  if (target.empty()) refuse(what, "empty target");
  TargetUrl t = base_dir;
  if (t.is_local()) {
    t.path = normalise(target, what, base_dir.path);
  } else {
    if (target.find_first_of("?#") != std::string_view::npos)
      refuse(what, "query strings and fragments are not supported in targets: '" + std::string(target) + "'");
    const std::string decoded = percent_decode(target, what);
    check_no_nul(decoded, what);
    t.path = normalise(decoded, what, base_dir.path);
  }
  return t;
}

AccessPolicy::AccessPolicy(const TargetUrl& reference_dir, std::string_view allowed_prefixes) {
  prefixes_.push_back(reference_dir);
  // The one list parser (storage_options.hpp): comma form or JSON list; UsageError otherwise.
  for (const std::string& entry : parse_list_option(kAllowedPrefixesOption, allowed_prefixes)) {
    const std::string_view item = entry;
    if (item == "*") {
      allow_all_ = true;
      continue;
    }
    const std::string what = "allowed_prefixes entry '" + std::string(item) + "'";
    if (parse_url_scheme(item).is_plain_path() && item.front() != '/')
      prefixes_.push_back(parse_absolute(std::filesystem::absolute(std::string(item)).string(), what));
    else
      prefixes_.push_back(parse_absolute(item, what));
  }
  // Local prefixes are compared with real paths too: add each one's real path (when it exists).
  const std::size_t n = prefixes_.size();
  for (std::size_t i = 0; i < n; ++i) {
    TargetUrl real;
    if (prefixes_[i].is_local() && real_path(prefixes_[i], real) && real.path != prefixes_[i].path)
      prefixes_.push_back(real);
  }
}

std::string AccessPolicy::describe() const {
  if (allow_all_) return "*";
  std::string out;
  for (const auto& p : prefixes_) out += (out.empty() ? "" : ", ") + p.str();
  return out;
}

TargetUrl AccessPolicy::check(const TargetUrl& target, std::string_view key) const {
  const std::string who = "key '" + std::string(key) + "': target '" + target.str() + "'";
  auto denied = [&](const std::string& why) -> StoreError {
    return StoreError("kerchunk reference " + who + " refused: " + why + " (allowed prefixes: " + describe() +
                      "; widen with the storage option allowed_prefixes)");
  };
  if (!allow_all_) {
    bool ok = false;
    for (const auto& p : prefixes_) ok = ok || under(target, p);
    if (!ok) throw denied("it lies outside the allowed prefixes");
  }
  if (!target.is_local()) return target;
  TargetUrl real;
  if (!real_path(target, real))
    throw StoreError("kerchunk reference " + who + ": cannot open it (" + std::strerror(errno) + ")");
  if (!allow_all_) {
    bool ok = false;
    for (const auto& p : prefixes_) {
      TargetUrl real_prefix;
      if (p.is_local() && real_path(p, real_prefix)) ok = ok || under(real, real_prefix);
    }
    if (!ok) throw denied("its real path '" + real.str() + "' (after symlinks) lies outside the allowed prefixes");
  }
  return real;
}

StoreOptions without_reference_options(const StoreOptions& options) {
  StoreOptions out = options;
  out.erase(std::string(kAllowedPrefixesOption));
  return out;
}

}  // namespace lazycube::refs
