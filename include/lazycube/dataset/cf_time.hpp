// Date-time text and CF time units ("hours since 1900-01-01"), as xarray/pandas read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lazycube::cf {

// numpy's NaT: the smallest int64.
inline constexpr std::int64_t kNaT = INT64_MIN;

// Nanoseconds since 1970-01-01T00:00:00 UTC for an ISO-like date-time: "1900-01-01",
// "1900-1-1", "1900-01-01 00:00:00", "2019-03-01T06:00", "...:00.5", with an optional "Z",
// " UTC" or "+05:00" / "-0330" offset (converted to UTC). nullopt when not understood.
std::optional<std::int64_t> parse_datetime_ns(std::string_view text);
// "1970-01-01T00:00:00" style text (fraction shown when non-zero), "NaT" for kNaT.
std::string format_datetime_ns(std::int64_t ns);

// Nanoseconds in one CF time unit ("days", "hour", "Seconds", ...); nullopt when unknown.
std::optional<std::int64_t> time_unit_ns(std::string_view unit);

struct TimeUnits {
  std::int64_t unit_ns = 0;       // nanoseconds per step
  std::int64_t reference_ns = 0;  // the reference date, ns since the epoch (UTC)
};
// Parses "<unit> since <date>"; nullopt when it has no "since", an unknown unit or a date
// that cannot be parsed.
std::optional<TimeUnits> parse_time_units(std::string_view units);
// Calendars decoded to datetime64[ns] (standard, gregorian, proleptic_gregorian; case-insensitive).
bool is_standard_calendar(std::string_view calendar);

}  // namespace lazycube::cf
