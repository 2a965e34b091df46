#include "virtual_containers.hpp"

#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::icechunk {

namespace {

bool under(const refs::TargetUrl& url, const refs::TargetUrl& prefix) {
  if (url.scheme != prefix.scheme || url.authority != prefix.authority || url.path.size() < prefix.path.size())
    return false;
  for (std::size_t i = 0; i < prefix.path.size(); ++i)
    if (url.path[i] != prefix.path[i]) return false;
  return true;
}

std::string join_path(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

}  // namespace

VirtualContainers::VirtualContainers(const std::map<std::string, StoreOptions>& authorised,
                                     const std::vector<DeclaredContainer>& declared) {
  for (const auto& d : declared) {
    if (d.url_prefix.find("://") == std::string::npos) continue;  // a bare name of spec 1's defaults
    if (!d.name.empty()) named_.push_back(d);
    try {
      declared_.push_back({d, refs::parse_absolute(d.url_prefix, "virtual chunk container '" + d.url_prefix + "'")});
    } catch (const StoreError&) {  // a scheme lazycube cannot read: only the user's authorisation counts
    }
  }
  for (const auto& [prefix, options] : authorised)
    containers_.push_back({prefix, refs::parse_absolute(prefix, "virtual chunk container '" + prefix + "'"), options, {}});
}

namespace {

// The repository's settings for a chunk's container, overridden by the user's (credentials given
// by the user replace a declared anonymous access).
StoreOptions merged_options(const DeclaredContainer* declared, const StoreOptions& user) {
  if (!declared) return user;
  StoreOptions merged = declared->options;
  if (user.count("key") || user.count("secret") || user.count("token") || user.count("anon") || user.count("profile"))
    merged.erase("anon");
  for (const auto& [k, v] : user) merged[k] = v;
  return merged;
}

}  // namespace

const VirtualContainers::Declared* VirtualContainers::declared_for(const refs::TargetUrl& url) const {
  const Declared* best = nullptr;
  for (const auto& d : declared_)
    if (under(url, d.url) && (!best || d.url.path.size() > best->url.path.size())) best = &d;
  return best;
}

void VirtualContainers::check_redirect(const std::string& url, const std::string& what) const {
  const refs::TargetUrl target = refs::parse_absolute(url, what + " (redirect to '" + url + "')");
  std::vector<std::string> names;
  for (const auto& c : containers_) {
    if (under(target, c.url)) return;
    names.push_back(c.prefix);
  }
  throw StoreError(what + ": the redirect to '" + url + "' lies outside the authorised virtual chunk containers (" +
                   (names.empty() ? std::string("none") : "authorised: " + join_names(names)) + ")");
}

std::string VirtualContainers::absolute(const std::string& url, const std::string& what) const {
  constexpr std::string_view kScheme = "vcc://";
  if (!url.starts_with(kScheme)) return url;
  // vcc://NAME/PATH: PATH under the url_prefix of the container the repository declares as NAME
  // (Icechunk 2.1's relative virtual chunk URLs). Authorisation stays by prefix, as for any URL.
  const std::string rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  const std::string name = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
  const DeclaredContainer* container = nullptr;
  std::vector<std::string> names;
  for (const auto& d : named_) {
    if (d.name == name) container = &d;
    names.push_back(d.name);
  }
  if (name.empty() || !container)
    throw MetadataError(what + ": virtual chunk location '" + url + "' names the container '" + name +
                        "', which the repository does not declare (" +
                        (names.empty() ? std::string("it names none") : "named: " + join_names(names)) + ")");
  if (path.empty()) throw MetadataError(what + ": virtual chunk location '" + url + "' names no object");
  std::string prefix = container->url_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const std::string resolved = prefix + "/" + path;
  // The path may not climb out of its container (".." segments, or an absolute path).
  const refs::TargetUrl target = refs::parse_absolute(resolved, what + " (virtual chunk at '" + url + "')");
  if (!under(target, refs::parse_absolute(container->url_prefix, what)) || path.front() == '/')
    throw MetadataError(what + ": virtual chunk location '" + url + "' leaves its container '" +
                        container->url_prefix + "'");
  return resolved;
}

VirtualContainers::Target VirtualContainers::open(const std::string& given, const std::string& what) {
  const std::string url = absolute(given, what);
  const refs::TargetUrl target = refs::parse_absolute(url, what + " (virtual chunk at '" + url + "')");
  Container* best = nullptr;
  for (auto& c : containers_)
    if (under(target, c.url) && (!best || c.url.path.size() > best->url.path.size())) best = &c;
  const Declared* d = declared_for(target);
  if (!best) {
    std::vector<std::string> names;
    for (const auto& c : containers_) names.push_back(c.prefix);
    const std::string declared =
        d ? "the repository declares it as '" + d->container.url_prefix + "'" +
                (d->container.name.empty() ? "" : " (name '" + d->container.name + "')") + "; "
          : "the repository declares no container for it; ";
    throw StoreError(what + " is a virtual chunk at '" + url + "', whose container is not authorised (" + declared +
                     (names.empty() ? std::string("no virtual chunk containers are authorised")
                                    : "authorised: " + join_names(names)) +
                     "): authorise its URL prefix with its storage options (Python: virtual_chunk_containers=; CLI: "
                     "--virtual PREFIX --virtual-option PREFIX:KEY=VALUE)");
  }
  const std::string root = target.is_local() ? std::string("/") : target.scheme + "://" + target.authority;
  const std::string key = join_path(target.path);
  if (key.empty()) throw StoreError(what + ": virtual chunk location '" + url + "' names no object");
  std::lock_guard lock(mutex_);
  // One store per host or bucket and declared container (whose settings it merges).
  auto& store = best->stores[root + (d ? "\n" + d->container.url_prefix : std::string())];
  if (!store)
    store = target.is_local() ? make_file_store(root)
                              : open_location(root, merged_options(d ? &d->container : nullptr, best->options)).store;
  return {store, key};
}

}  // namespace lazycube::icechunk
