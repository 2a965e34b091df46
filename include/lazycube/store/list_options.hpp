// List-valued storage options (allowed_prefixes): the one parser, public so that the CLI checks
// a --option value as it reads it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube {

// The items of a list-valued storage option (value type "list": allowed_prefixes), the one
// parser for every list option: a JSON list of strings (`["a","b"]`) or items separated by
// commas or whitespace (empty items dropped). A value starting with '[' that is not a JSON list
// of non-empty strings is a UsageError naming the option; so is an item an option of URL
// prefixes (allowed_prefixes) cannot take: JSON debris ('[', ']', '"') or a scheme without
// "//" ("http:/h/"). "*" is an item like any other.
std::vector<std::string> parse_list_option(std::string_view name, std::string_view value);

// Whether `name` is a list-valued option (of any table or backend).
bool is_list_option(std::string_view name);

// Checks every list-valued option of `options` with parse_list_option (UsageError naming it).
void check_list_options(const StoreOptions& options);

}  // namespace lazycube
