// Evaluating derived forcings on a grid (lazycube/batch/forecast.hpp lists them; the formulae
// are in derived_forcings.cpp and docs/forecast.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lazycube::batch {

// The grid points a derived forcing is evaluated on: latitude and longitude in degrees (empty
// when the grid has none), with the sines and cosines of the latitudes computed once.
struct ForcingPoints {
  ForcingPoints() = default;
  ForcingPoints(std::vector<double> lat_deg, std::vector<double> lon_deg);
  std::vector<double> lat, lon, sin_lat, cos_lat;
};

// Whether the forcing varies over the grid (needs longitudes, and latitudes for the solar one).
bool derived_forcing_needs_grid(const std::string& name);

// out[0, count) = forcing `name` at `time_ns` on the points (count of them; year progress
// ignores the points), divided by `scale`. UsageError for an unknown name or missing points.
void derived_forcing_into(const std::string& name, std::int64_t time_ns, const ForcingPoints& points,
                          std::size_t count, double scale, double* out);

}  // namespace lazycube::batch
