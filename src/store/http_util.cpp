#include "http_util.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "lazycube/error.hpp"

namespace lazycube::http {

namespace {

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

std::string xml_element(std::string_view body, std::string_view name) {
  const std::string open = "<" + std::string(name) + ">", close = "</" + std::string(name) + ">";
  auto a = body.find(open);
  if (a == std::string_view::npos) return {};
  a += open.size();
  auto b = body.find(close, a);
  if (b == std::string_view::npos) return {};
  return std::string(trim(body.substr(a, b - a)));
}

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view v) {
  v = trim(v);
  if (v.rfind("bytes ", 0) != 0) return std::nullopt;
  v.remove_prefix(6);
  auto dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) return std::nullopt;
  auto first = to_u64(v.substr(0, dash)), last = to_u64(v.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) return std::nullopt;
  ContentRange r{*first, *last, std::nullopt};
  auto total = v.substr(slash + 1);
  if (total != "*") {
    r.total = to_u64(total);
    if (!r.total || r.last >= *r.total) return std::nullopt;
  }
  return r;
}

std::optional<std::uint64_t> parse_unsatisfied_range(std::string_view v) {
  v = trim(v);
  if (v.rfind("bytes */", 0) != 0) return std::nullopt;
  return to_u64(v.substr(8));
}

std::optional<double> parse_retry_after(std::string_view v) {
  auto n = to_u64(trim(v));
  if (!n) return std::nullopt;
  return static_cast<double>(*n);
}

std::string server_error(std::string_view body) {
  if (body.size() > 65536) body = body.substr(0, 65536);
  std::string code = xml_element(body, "Code"), message = xml_element(body, "Message");
  if (code.empty()) return message;
  return message.empty() ? code : code + ": " + message;
}

std::string host_of(std::string_view url) {
  auto start = url.find("://");
  start = start == std::string_view::npos ? 0 : start + 3;
  const auto end = url.find_first_of("/?#", start);
  return std::string(url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}


std::string percent_encode(std::string_view text, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

// An entity tag without its weak prefix and quotes, for comparing.
std::string_view bare_etag(std::string_view e) {
  e = trim(e);
  if (e.starts_with("W/")) e.remove_prefix(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view v) {
  v = trim(v);
  // "Sun, 06 Nov 1994 08:49:37 GMT": the weekday is redundant and not checked.
  const auto comma = v.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  v.remove_prefix(comma + 2);
  static const std::string_view months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (v.size() != 24 || v[2] != ' ' || v[6] != ' ' || v[11] != ' ' || v[14] != ':' || v[17] != ':' ||
      v.substr(20) != " GMT")
    return std::nullopt;
  int month = -1;
  for (int m = 0; m < 12; ++m)
    if (v.substr(3, 3) == months[m]) month = m;
  const auto day = to_u64(v.substr(0, 2)), year = to_u64(v.substr(7, 4)), hour = to_u64(v.substr(12, 2)),
             minute = to_u64(v.substr(15, 2)), second = to_u64(v.substr(18, 2));
  if (month < 0 || !day || !year || !hour || !minute || !second || *day < 1 || *day > 31 || *hour > 23 ||
      *minute > 59 || *second > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  return static_cast<std::int64_t>(::timegm(&tm));
}

ObjectVersion object_version(long status, const std::map<std::string, std::string>& headers, std::int64_t now) {
  ObjectVersion out;
  out.exists = status != 404;
  if (auto it = headers.find("etag"); out.exists && it != headers.end()) out.etag = std::string(trim(it->second));
  std::optional<std::int64_t> lifetime;
  bool revalidate = false;
  if (auto it = headers.find("cache-control"); it != headers.end()) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const auto cut = rest.find(',');
      std::string_view d = trim(rest.substr(0, cut));
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
      std::string lower(d);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "no-store") return ObjectVersion{.exists = out.exists};  // the server forbids keeping it
      if (lower == "no-cache" || lower.starts_with("no-cache=")) revalidate = true;
      if (lower.starts_with("max-age=")) {
        std::string_view n = std::string_view(lower).substr(8);
        if (n.size() >= 2 && n.front() == '"' && n.back() == '"') n = n.substr(1, n.size() - 2);
        const auto age = to_u64(n);
        lifetime = age ? static_cast<std::int64_t>(std::min<std::uint64_t>(*age, 1ULL << 31)) : 0;
      }
    }
  }
  if (!lifetime) {
    if (auto it = headers.find("expires"); it != headers.end()) {
      const auto expires = parse_http_date(it->second);
      const auto d = headers.find("date");
      const auto date = d == headers.end() ? std::optional<std::int64_t>(now) : parse_http_date(d->second);
      lifetime = expires && date ? *expires - *date : 0;  // a malformed Expires means "already expired"
    }
  }
  if (auto it = headers.find("age"); lifetime && it != headers.end())
    if (auto age = to_u64(trim(it->second))) *lifetime -= static_cast<std::int64_t>(std::min<std::uint64_t>(*age, 1ULL << 31));
  if (!revalidate && lifetime && *lifetime > 0 && (!out.etag.empty() || !out.exists)) out.fresh_until = now + *lifetime;
  return out;
}

std::vector<std::string> condition_headers(const ReadCondition& c) {
  std::vector<std::string> out;
  if (!c.etag.empty()) {
    const bool quoted = c.etag.front() == '"' || c.etag.starts_with("W/");
    out.push_back("If-Match: " + (quoted ? c.etag : "\"" + c.etag + "\""));
  }
  if (c.unmodified_since != 0) {
    const std::time_t t = static_cast<std::time_t>(c.unmodified_since);
    std::tm tm{};
    char date[64] = "";
    static const char* const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char* const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (::gmtime_r(&t, &tm))  // RFC 9110 IMF-fixdate, spelled out (strftime's %a/%b follow the locale)
      std::snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
                    months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    out.push_back(std::string("If-Unmodified-Since: ") + date);
  }
  return out;
}

void check_condition(long status, const std::map<std::string, std::string>& headers, const ReadCondition& c,
                     const std::string& what) {
  if (c.empty()) return;
  if (status == 412)
    throw StoreError(what + ": the object changed since it was referenced (HTTP 412 Precondition Failed; expected " +
                     c.describe() + ")");
  const auto etag = headers.find("etag");
  if (!c.etag.empty() && status >= 200 && status < 300 && etag != headers.end() &&
      bare_etag(etag->second) != bare_etag(c.etag))
    throw StoreError(what + ": the object changed since it was referenced (its ETag is " + etag->second +
                     "; expected " + c.describe() + ")");
}

}  // namespace lazycube::http

namespace lazycube {

std::string redact_url(std::string_view url) {
  std::string u(url.substr(0, url.find_first_of("?#")));
  auto scheme = u.find("://");
  auto host = scheme == std::string::npos ? 0 : scheme + 3;
  auto at = u.find('@', host), slash = u.find('/', host);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) u.erase(host, at + 1 - host);
  return u;
}

}  // namespace lazycube
