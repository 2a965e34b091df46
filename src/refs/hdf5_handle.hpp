// Owning wrapper of an HDF5 identifier (closed with the matching H5*close on scope exit).
#pragma once

#include <hdf5.h>

#include <utility>

namespace lazycube::refs {

template <herr_t (*Close)(hid_t)>
class Hdf5Handle {
 public:
  Hdf5Handle() = default;
  explicit Hdf5Handle(hid_t id) : id_(id) {}
  ~Hdf5Handle() {
    if (id_ >= 0) Close(id_);
  }
  Hdf5Handle(Hdf5Handle&& o) noexcept : id_(std::exchange(o.id_, -1)) {}
  Hdf5Handle& operator=(Hdf5Handle&& o) noexcept {
    std::swap(id_, o.id_);
    return *this;
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
};

using H5File = Hdf5Handle<H5Fclose>;
using H5Object = Hdf5Handle<H5Oclose>;
using H5Type = Hdf5Handle<H5Tclose>;
using H5Space = Hdf5Handle<H5Sclose>;
using H5Plist = Hdf5Handle<H5Pclose>;
using H5Attribute = Hdf5Handle<H5Aclose>;

}  // namespace lazycube::refs
