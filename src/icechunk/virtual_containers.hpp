// The virtual chunk containers a user authorised: URL prefix -> storage options. A virtual
// chunk's URL is read through a store opened with its container's options (one store per
// container and host or bucket); a URL under no authorised prefix is refused with a StoreError
// naming it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::icechunk {

class VirtualContainers {
 public:
  explicit VirtualContainers(const std::map<std::string, StoreOptions>& authorised);

  struct Target {
    std::shared_ptr<Store> store;
    std::string key;
  };
  // The store and key of `url`; `what` names the chunk for messages.
  Target open(const std::string& url, const std::string& what);

 private:
  struct Container {
    std::string prefix;  // as the user wrote it
    refs::TargetUrl url;
    StoreOptions options;
    std::map<std::string, std::shared_ptr<Store>> stores;  // by scheme://authority
  };
  std::vector<Container> containers_;
  std::mutex mutex_;
};

}  // namespace lazycube::icechunk
