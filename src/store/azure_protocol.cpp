#include "azure_protocol.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "http_util.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::azure {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// RFC 1123 date of now, as x-ms-date wants it (locale-independent).
std::string http_date_now() {
  static const char* const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char out[40];
  std::snprintf(out, sizeof out, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
                months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The value of header `name` (case-insensitive) in "Name: value" lines, "" when absent.
std::string header_value(const std::vector<std::string>& headers, std::string_view name) {
  for (const auto& h : headers) {
    const auto colon = h.find(':');
    if (colon != std::string::npos && lower(h.substr(0, colon)) == name) return trim(std::string_view(h).substr(colon + 1));
  }
  return {};
}

}  // namespace

std::string base64_decode(std::string_view text, const std::string& what) {
  auto out = lazycube::base64_decode(trim(text));
  if (!out || out->empty()) throw StoreError(what + " is not valid base64");
  return std::move(*out);
}

std::string block_id(std::size_t index) {
  char text[32];
  std::snprintf(text, sizeof text, "lazycube-%012zu", index);  // 21 bytes: 28 base64 characters, no '='
  return lazycube::base64_encode(text);
}

std::string block_list_xml(const std::vector<std::string>& ids) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const auto& id : ids) xml += "<Latest>" + id + "</Latest>";
  return xml + "</BlockList>";
}

SharedKeySigner::SharedKeySigner(std::string account, std::string_view base64_key)
    : account_(std::move(account)), key_(base64_decode(base64_key, "the Azure account key")) {}

std::string SharedKeySigner::string_to_sign(const std::string& method, const std::string& url,
                                            const std::vector<std::string>& headers) const {
  std::string s = method + "\n";
  std::string length = header_value(headers, "content-length");
  if (length == "0") length.clear();  // since version 2015-02-21 a zero length is signed as ""
  for (std::string_view name : {"content-encoding", "content-language"}) s += header_value(headers, name) + "\n";
  s += length + "\n";
  for (std::string_view name : {"content-md5", "content-type", "date", "if-modified-since", "if-match",
                                "if-none-match", "if-unmodified-since", "range"})
    s += header_value(headers, name) + "\n";
  // Canonicalized headers: x-ms-*, lower-cased, sorted, "name:value\n".
  std::vector<std::pair<std::string, std::string>> ms;
  for (const auto& h : headers) {
    const auto colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string name = lower(trim(std::string_view(h).substr(0, colon)));
    if (name.starts_with("x-ms-")) ms.emplace_back(std::move(name), trim(std::string_view(h).substr(colon + 1)));
  }
  std::sort(ms.begin(), ms.end());
  for (const auto& [name, value] : ms) s += name + ":" + value + "\n";
  // Canonicalized resource: /ACCOUNT/PATH then "\nname:value" per query parameter, sorted.
  const auto scheme_end = url.find("://");
  const std::size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const std::size_t path_start = std::min(url.find('/', host_start), url.size());
  const std::size_t query_start = std::min(url.find('?', host_start), url.size());
  std::string path = path_start < query_start ? url.substr(path_start, query_start - path_start) : "/";
  s += "/" + account_ + path;
  std::map<std::string, std::vector<std::string>> query;
  if (query_start < url.size()) {
    std::string_view q = std::string_view(url).substr(query_start + 1);
    while (!q.empty()) {
      const auto amp = q.find('&');
      const std::string_view part = q.substr(0, amp);
      q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
      if (part.empty()) continue;
      const auto eq = part.find('=');
      query[lower(percent_decode(part.substr(0, eq)))].push_back(
          eq == std::string_view::npos ? std::string() : percent_decode(part.substr(eq + 1)));
    }
  }
  for (auto& [name, values] : query) {
    std::sort(values.begin(), values.end());
    s += "\n" + name + ":";
    for (std::size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + values[i];
  }
  return s;
}

void SharedKeySigner::sign(const std::string& method, std::string& url, std::vector<std::string>& headers) const {
  headers.push_back("x-ms-date: " + http_date_now());
  headers.push_back("Authorization: SharedKey " + account_ + ":" +
                    lazycube::base64_encode(hmac_sha256(key_, string_to_sign(method, url, headers))));
}

std::string hmac_sha256(std::string_view key, std::string_view text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
            text.size(), mac, &mac_len))
    throw StoreError("HMAC-SHA256 failed (OpenSSL)");
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

void SasSigner::sign(const std::string&, std::string& url, std::vector<std::string>&) const {
  url += (url.find('?') == std::string::npos ? '?' : '&') + sas_;
}

std::string list_page_query(const std::string& prefix, bool delimited, const std::string& marker, int page_size) {
  std::string q = "?restype=container&comp=list";
  if (!prefix.empty()) q += "&prefix=" + http::percent_encode(prefix, false);
  if (delimited) q += "&delimiter=%2F";
  if (!marker.empty()) q += "&marker=" + http::percent_encode(marker, false);
  if (page_size > 0) q += "&maxresults=" + std::to_string(page_size);
  return q;
}

s3::ListPage parse_list_page(std::string_view xml) {
  if (xml.find("<EnumerationResults") == std::string_view::npos)
    throw StoreError("unexpected listing response (no <EnumerationResults>): " + std::string(xml.substr(0, 200)));
  s3::ListPage page;
  for (auto block : s3::blocks(xml, "Blob")) {
    std::size_t from = 0;
    bool found = false;
    std::string name = s3::xml_element(block, "Name", from, &found);
    if (found) page.keys.push_back(std::move(name));
  }
  for (auto block : s3::blocks(xml, "BlobPrefix")) {
    std::size_t from = 0;
    bool found = false;
    std::string name = s3::xml_element(block, "Name", from, &found);
    if (found) page.prefixes.push_back(std::move(name));
  }
  const std::string top = s3::without_blocks(s3::without_blocks(xml, "Blob"), "BlobPrefix");
  std::size_t from = 0;
  page.next_token = s3::xml_element(top, "NextMarker", from);
  page.truncated = !page.next_token.empty();
  return page;
}

std::map<std::string, std::string> parse_connection_string(std::string_view text) {
  std::map<std::string, std::string> out;
  int index = 0;
  while (!text.empty()) {
    const auto semi = text.find(';');
    const std::string part = trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    ++index;
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw StoreError("az:// storage option 'connection_string': part " + std::to_string(index) +
                       " is not Key=Value");
    out[part.substr(0, eq)] = part.substr(eq + 1);  // values may hold '=' (base64, SAS)
  }
  return out;
}

}  // namespace lazycube::azure
