// HDF5 prints its error stack on stderr ("HDF5-DIAG: Error detected in HDF5 ...") unless told
// not to, and in Debian's thread-safe build that setting belongs to each thread. netCDF-C turns it
// off only on the thread that first initialises it, so a GDAL read of a NetCDF-4 file on a worker
// thread printed netCDF-C's attribute probing (`_QuantizeBitRoundNumberOfSignificantBits` not
// found). Every thread that may call HDF5 (directly or through GDAL) calls this first; failures
// still come back as return codes, which become typed errors.
#pragma once

namespace lazycube {

// Turns HDF5's automatic error printing off for the calling thread (once per thread).
void quiet_hdf5_on_this_thread();

}  // namespace lazycube
