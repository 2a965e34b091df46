// The virtual chunk containers a user authorised (URL prefix -> storage options) and those the
// repository declares (repo_config.hpp). A virtual chunk's URL is read through a store opened
// with its container's options (one store per container and host or bucket): the repository's
// declared settings (endpoint, region, anonymous) overridden by the user's. A URL under no
// authorised prefix is refused with a StoreError naming it and the declared container it lies in.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lazycube/store/reference_access.hpp"
#include "repo_config.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::icechunk {

class VirtualContainers {
 public:
  VirtualContainers(const std::map<std::string, StoreOptions>& authorised, const std::vector<DeclaredContainer>& declared);

  struct Target {
    std::shared_ptr<Store> store;
    std::string key;
  };
  // The store and key of `url`, absolute or relative (vcc://NAME/PATH, resolved by absolute());
  // `what` names the chunk for messages.
  Target open(const std::string& url, const std::string& what);
  // `url` itself, or a vcc://NAME/PATH location as the absolute URL under the url_prefix of the
  // container the repository declares as NAME. MetadataError naming an undeclared container, or
  // a path leaving the container.
  std::string absolute(const std::string& url, const std::string& what) const;
  // A redirect hop of a virtual chunk's read: allowed only under an authorised container, as
  // the chunk's own URL is; otherwise a StoreError naming the target and the containers.
  void check_redirect(const std::string& url, const std::string& what) const;

 private:
  struct Container {
    std::string prefix;  // as the user wrote it
    refs::TargetUrl url;
    StoreOptions options;
    std::map<std::string, std::shared_ptr<Store>> stores;  // by scheme://authority and declared container
  };
  struct Declared {
    DeclaredContainer container;
    refs::TargetUrl url;
  };
  const Declared* declared_for(const refs::TargetUrl& url) const;

  std::vector<Container> containers_;
  std::vector<Declared> declared_;  // those whose prefix is a URL (spec 1 also has bare names: "az")
  std::vector<DeclaredContainer> named_;  // those with a name, for vcc:// locations
  std::mutex mutex_;
};

}  // namespace lazycube::icechunk
