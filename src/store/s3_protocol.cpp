#include "s3_protocol.hpp"

#include <cstdint>

#include "lazycube/error.hpp"

namespace lazycube::s3 {

namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Parses a numeric character reference body ("#65", "#x41"); false when malformed.
bool char_ref(std::string_view body, std::uint32_t& cp) {
  if (body.size() < 2 || body[0] != '#') return false;
  const bool hex = body[1] == 'x' || body[1] == 'X';
  std::string_view digits = body.substr(hex ? 2 : 1);
  if (digits.empty() || digits.size() > 8) return false;
  std::uint32_t v = 0;
  for (char ch : digits) {
    int d;
    if (ch >= '0' && ch <= '9') d = ch - '0';
    else if (hex && ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
    else if (hex && ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
    else return false;
    v = v * (hex ? 16 : 10) + static_cast<std::uint32_t>(d);
  }
  if (v > 0x10FFFF) return false;
  cp = v;
  return true;
}

}  // namespace

std::string xml_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    auto semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 12) {
      out += '&';
      continue;
    }
    std::string_view body = text.substr(i + 1, semi - i - 1);
    std::uint32_t cp = 0;
    if (body == "amp") out += '&';
    else if (body == "lt") out += '<';
    else if (body == "gt") out += '>';
    else if (body == "quot") out += '"';
    else if (body == "apos") out += '\'';
    else if (char_ref(body, cp)) append_utf8(out, cp);
    else {
      out += '&';
      continue;
    }
    i = semi;
  }
  return out;
}

std::string xml_element(std::string_view xml, std::string_view name, std::size_t& from, bool* found) {
  if (found) *found = false;
  const std::string open = "<" + std::string(name);
  std::size_t pos = from;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    std::size_t after = pos + open.size();
    if (after >= xml.size()) break;
    const char next = xml[after];
    if (next != '>' && next != '/' && next != ' ' && next != '\t' && next != '\r' && next != '\n') {
      pos = after;  // a longer name with the same start (<Prefix> vs <PrefixFoo>)
      continue;
    }
    auto gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <Name/>
      from = gt + 1;
      if (found) *found = true;
      return {};
    }
    const std::string close = "</" + std::string(name) + ">";
    auto end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    from = end + close.size();
    if (found) *found = true;
    return xml_decode(xml.substr(gt + 1, end - gt - 1));
  }
  return {};
}

// The raw (undecoded) inner text of each <name>…</name> block, in order.
std::vector<std::string_view> blocks(std::string_view xml, std::string_view name) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(name) + ">";
  const std::string close = "</" + std::string(name) + ">";
  std::size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    auto end = xml.find(close, pos + open.size());
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(pos + open.size(), end - pos - open.size()));
    pos = end + close.size();
  }
  return out;
}

// `xml` with every <name>…</name> block cut out (to read top-level elements only).
std::string without_blocks(std::string_view xml, std::string_view name) {
  std::string out;
  const std::string open = "<" + std::string(name) + ">";
  const std::string close = "</" + std::string(name) + ">";
  std::size_t pos = 0;
  while (true) {
    auto start = xml.find(open, pos);
    if (start == std::string_view::npos) break;
    auto end = xml.find(close, start + open.size());
    if (end == std::string_view::npos) break;
    out.append(xml.substr(pos, start - pos));
    pos = end + close.size();
  }
  out.append(xml.substr(pos));
  return out;
}

ListPage parse_list_page(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos)
    throw StoreError("unexpected listing response (no <ListBucketResult>): " +
                     std::string(xml.substr(0, 200)));
  ListPage page;
  for (auto block : blocks(xml, "Contents")) {
    std::size_t from = 0;
    bool found = false;
    std::string key = xml_element(block, "Key", from, &found);
    if (found) page.keys.push_back(std::move(key));
  }
  for (auto block : blocks(xml, "CommonPrefixes")) {
    std::size_t from = 0;
    bool found = false;
    std::string prefix = xml_element(block, "Prefix", from, &found);
    if (found) page.prefixes.push_back(std::move(prefix));
  }
  const std::string top = without_blocks(without_blocks(xml, "Contents"), "CommonPrefixes");
  std::size_t from = 0;
  page.truncated = xml_element(top, "IsTruncated", from) == "true";
  from = 0;
  page.next_token = xml_element(top, "NextContinuationToken", from);
  if (page.truncated && page.next_token.empty())
    throw StoreError("truncated listing without <NextContinuationToken>");
  return page;
}

ErrorBody parse_error_body(std::string_view xml) {
  ErrorBody e;
  auto start = xml.find("<Error");
  if (start == std::string_view::npos) return e;
  std::string_view body = xml.substr(start);
  std::size_t from = 0;
  e.code = xml_element(body, "Code", from);
  from = 0;
  e.message = xml_element(body, "Message", from);
  return e;
}

std::string redact(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    std::size_t pos = 0;
    while ((pos = text.find(s, pos)) != std::string::npos) {
      text.replace(pos, s.size(), "***");
      pos += 3;
    }
  }
  return text;
}

namespace {

// The five XML entities (an ETag is quoted: "&quot;...&quot;" is what S3 itself writes).
std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string complete_multipart_xml(const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (std::size_t i = 0; i < etags.size(); ++i)
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + xml_escape(etags[i]) + "</ETag></Part>";
  return xml + "</CompleteMultipartUpload>";
}

}  // namespace lazycube::s3
