#include "util/hdf5_quiet.hpp"

#include <hdf5.h>

namespace lazycube {

void quiet_hdf5_on_this_thread() {
  thread_local bool quiet = false;
  if (quiet) return;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  quiet = true;
}

}  // namespace lazycube
