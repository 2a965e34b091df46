// CF coordinate attributes, decoded as xarray's decode_cf_variables does (decode_coords):
// "coordinates" (per variable and global) names coordinate variables; with "all", the
// variables named by bounds, grid_mapping, climatology, ..., cell_measures and formula_terms
// become coordinates too. A variable's attribute moves to its encoding only when every name it
// lists is a variable of the dataset (else it stays an attribute, as in xarray).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazycube {

// decode_coords: "" (off), "coordinates" (xarray's True) or "all"; anything else a UsageError.
void check_decode_coords(const std::string& mode);

struct CfCoordinates {
  // Per variable: its attribute keys that move to the encoding, and those dropped (with "all",
  // a related attribute naming a variable the dataset lacks: xarray warns and drops it).
  std::map<std::string, std::vector<std::string>> moved, dropped;
  // Names the dataset's global `coordinates` attribute lists (the attribute is dropped).
  std::vector<std::string> global;
  // The UserWarnings xarray's decode_cf_variables gives (with "all"), in its words and order:
  // "Attribute cell_measures malformed" (an odd number of words in a role list) and
  // "Variable(s) referenced in bounds not in variables: ['x_bnds']".
  std::vector<std::string> warnings;
};

// `attrs`: each variable's attributes by name; `global_attrs` loses its `coordinates` when
// decoding.
CfCoordinates decode_cf_coordinates(const std::map<std::string, nlohmann::json>& attrs,
                                    nlohmann::json& global_attrs, const std::string& mode);

// xarray's _update_bounds_attributes (when decoding times): the bounds variable of a time
// variable takes its units and calendar unless it has its own.
void inherit_time_bounds_attributes(std::map<std::string, nlohmann::json>& attrs);

// The variable names a (decoded) encoding refers to through its CF coordinate keys.
std::vector<std::string> cf_coordinate_names(const nlohmann::json& encoding);

}  // namespace lazycube
