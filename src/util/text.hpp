// Text encodings used by metadata and string dtypes: base64, UTF-8 <-> UTF-32.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lazycube {

// Standard base64 (RFC 4648, '=' padding); nullopt when `text` is not valid base64.
std::optional<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

// UTF-8 to UTF-32 code points; invalid sequences become U+FFFD.
std::u32string utf8_to_utf32(std::string_view utf8);
// UTF-32 code points to UTF-8 (stops at the first NUL when `stop_at_nul`).
std::string utf32_to_utf8(std::u32string_view utf32, bool stop_at_nul = true);

// "a, b, c": names joined for messages.
// The value of the environment variable `name`; "" when it is unset.
std::string env_or_empty(const char* name);

std::string join_names(const std::vector<std::string>& names, std::string_view separator = ", ");

}  // namespace lazycube
