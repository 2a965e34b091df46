// The time step of the CF encoding, shared by the plan (cf_encode.cpp: are all values whole
// units?) and the values (cf_encode_apply.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lazycube::cf {

// Where datetime64 values are counted from, in which calendar.
struct TimeReference {
  bool standard = true;        // standard calendars: plain nanosecond differences
  std::string calendar;        // otherwise the calendar's own day count (cf::calendar_day)
  std::int64_t ns = 0;         // the reference, ns since 1970 (standard calendars)
  std::int64_t day = 0;        // the reference's calendar_day (other calendars)
  std::int64_t time_of_day_ns = 0;
};

// Nanoseconds from the reference to the datetime64[ns] value `ns`. Other calendars as
// cftime.date2num counts datetime64 values (xarray's path for them): the value truncated to
// microseconds, its Gregorian fields read as a date of the calendar. nullopt when that date
// does not exist there (February 29 in noleap).
std::optional<__int128> ns_since_reference(const TimeReference& ref, std::int64_t ns);

}  // namespace lazycube::cf
