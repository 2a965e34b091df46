#include "lazycube/dataset/cf_time.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>

namespace lazycube::cf {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (civil-from-days inverse).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<std::int64_t> parse_datetime_ns(std::string_view text) {
  const auto parsed = parse_datetime(text);
  if (!parsed) return std::nullopt;
  return parsed->ns;
}

std::optional<ParsedDateTime> parse_datetime(std::string_view text) {
  static const std::regex pattern(
      R"(^\s*(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?)"
      R"(\s*(Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?\s*$)",
      std::regex::icase);
  std::cmatch m;
  const std::string s(text);
  if (!std::regex_match(s.c_str(), m, pattern)) return std::nullopt;
  auto num = [&](int i) { return m[i].matched ? std::stoll(m[i].str()) : 0LL; };
  const std::int64_t year = num(1);
  const auto month = static_cast<unsigned>(num(2));
  const auto day = static_cast<unsigned>(num(3));
  const std::int64_t hour = num(4), minute = num(5), second = num(6);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  std::int64_t frac_ns = 0;
  if (m[7].matched) {
    std::string f = m[7].str();
    f.resize(9, '0');
    frac_ns = std::stoll(f);
  }
  std::int64_t offset_s = 0;
  const bool has_zone = m[8].matched;
  if (has_zone) {
    const std::string tz = m[8].str();
    if (tz[0] == '+' || tz[0] == '-') {
      const std::string digits = tz.substr(1);
      const std::int64_t hh = std::stoll(digits.substr(0, 2));
      std::int64_t mm = 0;
      if (digits.size() > 2) mm = std::stoll(digits.substr(digits.size() - 2));
      offset_s = (hh * 3600 + mm * 60) * (tz[0] == '-' ? -1 : 1);
    }
  }
  const std::int64_t days = days_from_civil(year, month, day);
  const std::int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  ParsedDateTime out;
  out.seconds = seconds;
  out.frac_ns = frac_ns;
  // Outside datetime64[ns] (years 1678 to 2262) ns wraps modulo 2^64 (unsigned arithmetic:
  // no overflow); `seconds` and `frac_ns` stay exact (a CF reference "since 0001-01-01").
  out.ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(seconds) * 1'000'000'000u +
                                     static_cast<std::uint64_t>(frac_ns));
  if (has_zone) out.offset_s = offset_s;
  out.local = {year, month, day, (hour * 3600 + minute * 60 + second) * 1'000'000'000 + frac_ns};
  return out;
}

namespace {

// "YYYY-MM-DD", "HH:MM:SS" and the nanoseconds of a time point.
struct DateTimeText {
  std::string date, time;
  std::int64_t frac_ns = 0;
};

DateTimeText split_datetime(std::int64_t ns) {
  std::int64_t secs = ns / 1'000'000'000;
  std::int64_t frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    secs -= 1;
  }
  std::int64_t days = secs / 86400;
  std::int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  std::int64_t y = 0;
  unsigned mo = 0, d = 0;
  civil_from_days(days, y, mo, d);
  char date[32], time[32];
  std::snprintf(date, sizeof date, "%04lld-%02u-%02u", static_cast<long long>(y), mo, d);
  std::snprintf(time, sizeof time, "%02lld:%02lld:%02lld", static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  return {date, time, frac};
}

// pandas' time of day: a fraction of 6 digits, or 9 when there are nanoseconds, and the zone.
std::string pandas_time(const DateTimeText& t, std::optional<std::int64_t> offset_s) {
  std::string out = t.time;
  char buf[32];
  if (t.frac_ns % 1000 != 0) {
    std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(t.frac_ns));
    out += buf;
  } else if (t.frac_ns != 0) {
    std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(t.frac_ns / 1000));
    out += buf;
  }
  if (offset_s) {
    const std::int64_t a = *offset_s < 0 ? -*offset_s : *offset_s;
    std::snprintf(buf, sizeof buf, "%c%02lld:%02lld", *offset_s < 0 ? '-' : '+', static_cast<long long>(a / 3600),
                  static_cast<long long>(a / 60 % 60));
    out += buf;
  }
  return out;
}

}  // namespace

std::string format_datetime_ns(std::int64_t ns) {
  if (ns == kNaT) return "NaT";
  const DateTimeText t = split_datetime(ns);
  std::string out = t.date + "T" + t.time;
  if (t.frac_ns != 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(t.frac_ns));
    out += buf;
  }
  return out;
}

std::string format_pandas_timestamp(std::int64_t ns, std::optional<std::int64_t> offset_s) {
  if (ns == kNaT) return "NaT";
  const DateTimeText t = split_datetime(ns + offset_s.value_or(0) * 1'000'000'000);
  return t.date + " " + pandas_time(t, offset_s);
}

std::string format_reference_date(std::int64_t ns, std::optional<std::int64_t> offset_s) {
  if (ns == kNaT) return "NaT";
  const DateTimeText t = split_datetime(ns + offset_s.value_or(0) * 1'000'000'000);
  const std::string time = pandas_time(t, offset_s);
  return time == "00:00:00" ? t.date : t.date + "T" + time;
}

std::optional<std::int64_t> time_unit_ns(std::string_view unit) {
  // Like xarray: lower-case, plural form.
  std::string u = lower(trim(unit));
  if (u.empty()) return std::nullopt;
  if (u.back() != 's') u += 's';
  if (u == "nanoseconds") return 1;
  if (u == "microseconds") return 1'000;
  if (u == "milliseconds") return 1'000'000;
  if (u == "seconds") return 1'000'000'000;
  if (u == "minutes") return 60'000'000'000;
  if (u == "hours") return 3'600'000'000'000;
  if (u == "days") return 86'400'000'000'000;
  return std::nullopt;
}

std::optional<TimeUnits> parse_time_units(std::string_view units) {
  // xarray: re.match(r"(.+) since (.+)") with both parts stripped.
  const std::string text(units);
  const auto pos = text.rfind(" since ");
  if (pos == std::string::npos || pos == 0) return std::nullopt;
  const auto unit = time_unit_ns(text.substr(0, pos));
  const auto ref = parse_datetime(trim(text.substr(pos + 7)));
  if (!unit || !ref) return std::nullopt;
  return TimeUnits{*unit, ref->ns, trim(text.substr(0, pos)), ref->offset_s, ref->local, ref->seconds, ref->frac_ns};
}

bool is_time_unit(std::string_view units) {
  return std::find(kTimeUnits.begin(), kTimeUnits.end(), units) != kTimeUnits.end();
}

bool is_standard_calendar(std::string_view calendar) {
  const std::string c = lower(trim(calendar));
  return c == "standard" || c == "gregorian" || c == "proleptic_gregorian";
}

CivilTime civil_time(std::int64_t ns) {
  constexpr std::int64_t kDay = 86'400'000'000'000;
  std::int64_t days = ns / kDay, tod = ns % kDay;
  if (tod < 0) {
    tod += kDay;
    days -= 1;
  }
  CivilTime t;
  civil_from_days(days, t.year, t.month, t.day);
  t.time_of_day_ns = tod;
  return t;
}

std::optional<std::int64_t> calendar_day(std::string_view calendar, std::int64_t y, unsigned m, unsigned d) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  static constexpr unsigned kBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  if (m < 1 || m > 12 || d < 1) return std::nullopt;
  const std::string c = lower(trim(calendar));
  const bool leap4 = ((y % 4) + 4) % 4 == 0;
  const auto month_days = [&](bool leap) { return kDays[m - 1] + (m == 2 && leap ? 1 : 0); };
  if (is_standard_calendar(c)) {
    const bool leap = leap4 && (y % 100 != 0 || y % 400 == 0);
    if (d > month_days(leap)) return std::nullopt;
    return days_from_civil(y, m, d);
  }
  if (c == "noleap" || c == "365_day") {
    if (d > month_days(false)) return std::nullopt;
    return 365 * y + kBefore[m - 1] + d - 1;
  }
  if (c == "all_leap" || c == "366_day") {
    if (d > month_days(true)) return std::nullopt;
    return 366 * y + kBefore[m - 1] + (m > 2 ? 1 : 0) + d - 1;
  }
  if (c == "360_day") {
    if (d > 30) return std::nullopt;
    return 360 * y + 30 * (m - 1) + d - 1;
  }
  if (c == "julian") {
    if (d > month_days(leap4)) return std::nullopt;
    // Days_from_civil without the century rules: years starting in March.
    const std::int64_t yy = y - (m <= 2 ? 1 : 0);
    const std::int64_t q = (yy >= 0 ? yy : yy - 3) / 4;
    return 365 * yy + q + (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
  }
  return std::nullopt;
}

bool is_cf_calendar(std::string_view calendar) {
  static const char* const kOthers[] = {"noleap", "365_day", "all_leap", "366_day", "360_day", "julian"};
  const std::string c = lower(trim(calendar));
  return is_standard_calendar(c) || std::find(std::begin(kOthers), std::end(kOthers), c) != std::end(kOthers);
}

}  // namespace lazycube::cf
