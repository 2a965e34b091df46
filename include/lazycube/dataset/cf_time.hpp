// Date-time text and CF time units ("hours since 1900-01-01"), as xarray/pandas read them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lazycube::cf {

// numpy's NaT: the smallest int64.
inline constexpr std::int64_t kNaT = INT64_MIN;

// Nanoseconds since 1970-01-01T00:00:00 UTC for an ISO-like date-time: "1900-01-01",
// "1900-1-1", "1900-01-01 00:00:00", "2019-03-01T06:00", "...:00.5", with an optional "Z",
// " UTC" or "+05:00" / "-0330" offset (converted to UTC). nullopt when not understood. Outside
// years 1678 to 2262 the count wraps modulo 2^64 (ParsedDateTime::seconds is exact).
std::optional<std::int64_t> parse_datetime_ns(std::string_view text);
// The same parse, keeping the zone written: offset_s is set when the text names one ("Z" and
// "UTC" are +00:00), as pandas.Timestamp keeps a tz-aware reference date.
// A date as its fields (year, month, day as written or proleptic Gregorian) and time of day.
struct CivilTime {
  std::int64_t year = 1970;
  unsigned month = 1, day = 1;
  std::int64_t time_of_day_ns = 0;
};
struct ParsedDateTime {
  std::int64_t ns = 0;                  // UTC
  std::optional<std::int64_t> offset_s; // the written zone's offset from UTC
  CivilTime local;                      // the fields as written (before the zone's offset)
  std::int64_t seconds = 0;             // UTC seconds since the epoch, exact for every year
  std::int64_t frac_ns = 0;             // and the nanoseconds after them (0 to 999999999)
};
std::optional<ParsedDateTime> parse_datetime(std::string_view text);
// "1970-01-01T00:00:00" style text (fraction shown when non-zero), "NaT" for kNaT.
std::string format_datetime_ns(std::int64_t ns);
// str(pandas.Timestamp): "2000-01-01 06:00:00", a fraction of 6 digits (9 when it has
// nanoseconds) when non-zero, and "+05:00" when a zone is given (the time shown is local).
std::string format_pandas_timestamp(std::int64_t ns, std::optional<std::int64_t> offset_s = {});
// xarray's format_timestamp (the reference date of units it writes): the pandas text with a
// "T" between date and time, or the date alone at midnight without a zone.
std::string format_reference_date(std::int64_t ns, std::optional<std::int64_t> offset_s = {});

// CF time units a timedelta variable may carry, coarsest first (xarray's TIME_UNITS; the order
// is the one xarray infers units in).
inline constexpr std::array<std::string_view, 7> kTimeUnits = {
    "days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds"};
bool is_time_unit(std::string_view units);

// Nanoseconds in one CF time unit ("days", "hour", "Seconds", ...); nullopt when unknown.
std::optional<std::int64_t> time_unit_ns(std::string_view unit);

struct TimeUnits {
  std::int64_t unit_ns = 0;       // nanoseconds per step
  std::int64_t reference_ns = 0;  // the reference date, ns since the epoch (UTC)
  std::string unit;               // the unit as written ("Hours"), spaces trimmed
  std::optional<std::int64_t> reference_offset_s;  // the reference's zone, when it names one
  CivilTime reference_local;      // the reference's fields as written (non-standard calendars)
  // The reference exactly, for any year (reference_ns wraps outside years 1678 to 2262, yet
  // "hours since 0001-01-01" still gives datetime64[ns] times): seconds + ns after them.
  std::int64_t reference_s = 0;
  std::int64_t reference_frac_ns = 0;
};
// Parses "<unit> since <date>"; nullopt when it has no "since", an unknown unit or a date
// that cannot be parsed.
std::optional<TimeUnits> parse_time_units(std::string_view units);
// Calendars decoded to datetime64[ns] (standard, gregorian, proleptic_gregorian; case-insensitive).
bool is_standard_calendar(std::string_view calendar);
// The proleptic Gregorian fields of ns since 1970-01-01 (time of day >= 0).
CivilTime civil_time(std::int64_t ns);
// Days from a fixed epoch of `calendar` (each calendar its own) to year-month-day of that
// calendar, as cftime counts them; the standard calendars count proleptic Gregorian days since
// 1970-01-01 (as the decoding does). nullopt when the date does not exist there (February 29 in
// noleap, day 31 in 360_day) or the calendar is not one of is_cf_calendar's.
std::optional<std::int64_t> calendar_day(std::string_view calendar, std::int64_t year, unsigned month, unsigned day);
// Every calendar cftime knows (the standard ones, noleap/365_day, all_leap/366_day, 360_day,
// julian; case-insensitive).
bool is_cf_calendar(std::string_view calendar);

}  // namespace lazycube::cf
