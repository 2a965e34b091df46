// The derived forcings of forecast samples (docs/forecast.md "Derived forcings"), computed from
// the time and the grid's latitude/longitude while a batch is assembled, never stored.
//
// Year progress p_y = frac(seconds since 1970 / (365.24219 * 86400)) and local day progress
// p_d = frac(seconds since 1970 / 86400 + longitude / 360), as GraphCast defines them; each
// forcing is sin(2 pi p) or cos(2 pi p).
//
// Top-of-atmosphere incident solar radiation is integrated over the hour before each time, as
// ERA5's tisr (J m-2): S0 / R^2 * integral of max(0, cos zenith) dt, with S0 = 1361 W m-2 (the
// total solar irradiance of Kopp & Lean 2011) and the Sun's position from the Astronomical
// Almanac's low-precision formulae (section C, "Sun"; 0.01 degree from 1950 to 2050): with n the
// days since J2000.0 (2000-01-01T12:00),
//   L = 280.460 + 0.9856474 n,  g = 357.528 + 0.9856003 n          (degrees)
//   lambda = L + 1.915 sin g + 0.020 sin 2g,  eps = 23.439 - 0.0000004 n
//   R = 1.00014 - 0.01671 cos g - 0.00014 cos 2g                 (AU)
//   alpha = atan2(cos eps sin lambda, cos lambda),  delta = asin(sin eps sin lambda)
//   GMST = 280.46061837 + 360.98564736629 n,  hour angle h = GMST + longitude - alpha
//   cos zenith = sin(lat) sin(delta) + cos(lat) cos(delta) cos(h).
// delta, R and alpha are taken at the middle of the hour (they move by less than 0.02 degree in
// it); h advances at the sidereal rate, so the integral has a closed form: over the stretches of
// the hour where the Sun is up, integral of (a + b cos h) dh / omega = [a h + b sin h] / omega.
#include <cmath>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "derived_forcings.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

namespace {
namespace derived {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;
constexpr double kSecondsPerDay = 86400.0;
constexpr double kDaysPerYear = 365.24219;  // the tropical year, as GraphCast's year progress
constexpr double kSolarConstant = 1361.0;   // W m-2
constexpr double kIntegrationSeconds = 3600.0;
constexpr double kSiderealDegPerDay = 360.98564736629;
constexpr double kJ2000DaysSinceEpoch = 10957.5;  // 2000-01-01T12:00 - 1970-01-01T00:00

enum class Kind { YearSin, YearCos, DaySin, DayCos, Solar };

struct Entry {
  const char* name;
  Kind kind;
};
constexpr Entry kEntries[] = {
    {"toa_incident_solar_radiation", Kind::Solar}, {"year_progress_sin", Kind::YearSin},
    {"year_progress_cos", Kind::YearCos},          {"day_progress_sin", Kind::DaySin},
    {"day_progress_cos", Kind::DayCos}};

const Entry& entry(const std::string& name) {
  for (const auto& e : kEntries)
    if (name == e.name) return e;
  std::string known;
  for (const auto& e : kEntries) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw UsageError("'" + name + "' is not a derived forcing (known: " + known + ")");
}

double seconds_of(std::int64_t time_ns) {
  // whole seconds and the rest apart, so that large times keep their sub-second part
  return static_cast<double>(time_ns / 1'000'000'000) + static_cast<double>(time_ns % 1'000'000'000) * 1e-9;
}

double fraction(double x) { return x - std::floor(x); }

// The Sun at `days` since J2000.0: declination, right ascension (radians), distance (AU).
struct SunPosition {
  double declination, right_ascension, distance;
};
SunPosition sun_at(double days) {
  const double L = 280.460 + 0.9856474 * days;
  const double g = (357.528 + 0.9856003 * days) * kDeg;
  const double lambda = (L + 1.915 * std::sin(g) + 0.020 * std::sin(2 * g)) * kDeg;
  const double eps = (23.439 - 0.0000004 * days) * kDeg;
  return {std::asin(std::sin(eps) * std::sin(lambda)),
          std::atan2(std::cos(eps) * std::sin(lambda), std::cos(lambda)),
          1.00014 - 0.01671 * std::cos(g) - 0.00014 * std::cos(2 * g)};
}

// Integral over h in [h1, h2] of max(0, a + b cos h) (b >= 0).
double positive_part_integral(double a, double b, double h1, double h2) {
  const auto F = [&](double h) { return a * h + b * std::sin(h); };
  if (b <= 0) return a > 0 ? a * (h2 - h1) : 0.0;
  const double c = -a / b;
  if (c <= -1) return F(h2) - F(h1);  // the Sun stays up
  if (c >= 1) return 0.0;             // it stays down
  const double h0 = std::acos(c);     // up where h lies within h0 of a multiple of 2 pi
  double total = 0;
  const double two_pi = 2 * kPi;
  for (double k = std::floor((h1 - h0) / two_pi); k * two_pi - h0 <= h2; k += 1) {
    const double lo = std::max(h1, k * two_pi - h0), hi = std::min(h2, k * two_pi + h0);
    if (hi > lo) total += F(hi) - F(lo);
  }
  return total;
}

}  // namespace derived
}  // namespace

const std::vector<std::string>& derived_forcing_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : derived::kEntries) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

bool is_derived_forcing(const std::string& name) {
  for (const auto& e : derived::kEntries)
    if (name == e.name) return true;
  return false;
}

bool derived_forcing_needs_grid(const std::string& name) {
  const auto k = derived::entry(name).kind;
  return k != derived::Kind::YearSin && k != derived::Kind::YearCos;
}

double derived_forcing_scale(const std::string& name) {
  return derived::entry(name).kind == derived::Kind::Solar ? derived::kSolarConstant * derived::kIntegrationSeconds
                                                           : 1.0;
}

ForcingPoints::ForcingPoints(std::vector<double> lat_deg, std::vector<double> lon_deg)
    : lat(std::move(lat_deg)), lon(std::move(lon_deg)) {
  sin_lat.resize(lat.size());
  cos_lat.resize(lat.size());
  for (std::size_t i = 0; i < lat.size(); ++i) {
    sin_lat[i] = std::sin(lat[i] * derived::kDeg);
    cos_lat[i] = std::cos(lat[i] * derived::kDeg);
  }
}

void derived_forcing_into(const std::string& name, std::int64_t time_ns, const ForcingPoints& points, std::size_t count,
                          double scale, double* out) {
  using namespace derived;
  const Kind kind = entry(name).kind;
  const double seconds = seconds_of(time_ns);
  if (kind == Kind::YearSin || kind == Kind::YearCos) {
    const double p = fraction(seconds / kSecondsPerDay / kDaysPerYear);
    const double v = (kind == Kind::YearSin ? std::sin(2 * kPi * p) : std::cos(2 * kPi * p)) / scale;
    for (std::size_t i = 0; i < count; ++i) out[i] = v;
    return;
  }
  if (points.lon.size() != count)
    throw UsageError("derived forcing '" + name + "' needs the longitude of every grid point");
  if (kind == Kind::DaySin || kind == Kind::DayCos) {
    const double greenwich = fraction(seconds / kSecondsPerDay);
    for (std::size_t i = 0; i < count; ++i) {
      const double p = fraction(greenwich + points.lon[i] / 360.0);
      out[i] = (kind == Kind::DaySin ? std::sin(2 * kPi * p) : std::cos(2 * kPi * p)) / scale;
    }
    return;
  }
  // Solar: the hour before `time_ns`.
  if (points.lat.size() != count)
    throw UsageError("derived forcing '" + name + "' needs the latitude of every grid point");
  const double end_days = seconds / kSecondsPerDay - kJ2000DaysSinceEpoch;
  const double start_days = end_days - kIntegrationSeconds / kSecondsPerDay;
  const SunPosition sun = sun_at(0.5 * (start_days + end_days));
  const double omega = kSiderealDegPerDay * kDeg / kSecondsPerDay;  // rad per second
  const double gmst_start = (280.46061837 + kSiderealDegPerDay * start_days) * kDeg;
  const double span = omega * kIntegrationSeconds;
  const double sin_d = std::sin(sun.declination), cos_d = std::cos(sun.declination);
  const double flux = kSolarConstant / (sun.distance * sun.distance);
  for (std::size_t i = 0; i < count; ++i) {
    // h1 reduced to [0, 2 pi) keeps the sums well conditioned
    double h1 = std::fmod(gmst_start + points.lon[i] * kDeg - sun.right_ascension, 2 * kPi);
    if (h1 < 0) h1 += 2 * kPi;
    const double a = points.sin_lat[i] * sin_d, b = points.cos_lat[i] * cos_d;
    out[i] = flux * positive_part_integral(a, b, h1, h1 + span) / omega / scale;
  }
}

void compute_derived_forcing(const std::string& name, std::int64_t time_ns, std::span<const double> lat,
                             std::span<const double> lon, std::span<double> out) {
  const ForcingPoints points(std::vector<double>(lat.begin(), lat.end()), std::vector<double>(lon.begin(), lon.end()));
  derived_forcing_into(name, time_ns, points, out.size(), 1.0, out.data());
}

}  // namespace lazycube::batch
