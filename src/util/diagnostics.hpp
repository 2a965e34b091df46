// Diagnostics of the libraries lazycube calls (GDAL, HDF5, netCDF): captured instead of printed,
// collected here process-wide, and handed to whoever reports them (the CLI prints them on stderr
// as "warning: ..." or under "warnings" in --json). A warning never stops a read; an error that
// does becomes a typed exception instead.
#pragma once

#include <string>
#include <vector>

namespace lazycube::diagnostics {

// Records a warning. The same text is kept once until the next take_warnings() (every thread
// opening a GRIB file hears the same complaint); at most 100 are kept, the rest only counted.
void warn(std::string text);

// The warnings recorded since the previous call, oldest first, then "N more warnings not kept"
// when some were dropped; the collector is then empty.
std::vector<std::string> take_warnings();

}  // namespace lazycube::diagnostics
