// The registry of formats: the one place a URL or a store location becomes named arrays.
//
// Each format (Zarr, Icechunk, kerchunk references, GDAL's NetCDF/HDF5/GRIB) is one file that
// registers itself with LAZYCUBE_REGISTER_FORMAT: its engine name, how it recognises what it
// reads (from the URL alone, or from the answers of the sniffing round), the keys of the format
// options document it takes (each format parses them into its own typed options) and its opener.
// lazycube::open asks the registry and nothing else; adding a format is that file, its test and
// a fixture (docs/formats.md, "Adding a format").
//
// Sniffing a store location costs one round of concurrent requests: every format's probes
// (Zarr's metadata documents, Icechunk's `repo` magic and branch ref) go out in one get_many,
// through the store's layers, so a persistent cache (storage option cache_dir) keeps the answers,
// absences included, like any object.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/unreadable_array.hpp"

namespace lazycube::format {

// What the caller asks for, whatever the format: the storage options of the URL's store, the
// node below the URL (`group`, for formats with hierarchies), the engine ("" = sniff) and the
// format options document ({"consolidated": false, "branch": "dev", ...}); a key no format of
// the chain takes is a UsageError naming it and the formats that do take it.
struct Request {
  StoreOptions storage_options;
  std::string engine;
  std::string group;
  nlohmann::json format_options = nlohmann::json::object();
};

// The answers of the sniffing round: key (in the store) -> bytes, nullopt when absent. Keys a
// probe asked with a byte range hold that range only.
using ProbeAnswers = std::map<std::string, std::optional<Buffer>>;

// What the sniffing round asks of a location and what it saw.
struct Sniff {
  Location root;        // the location the URL names
  std::string node;     // root.path with the requested group below it ("" = the store's root)
  ProbeAnswers answers; // every registered format's probes, fetched together
  // The answer for `key` (a key some format probed); nullptr when it was not probed (a failed
  // round: each format then reads for itself).
  const std::optional<Buffer>* answer(const std::string& key) const {
    auto it = answers.find(key);
    return it == answers.end() ? nullptr : &it->second;
  }
};

// A format's result: named arrays ("group/var" below subgroups) and the root's attributes, for
// the dataset layer to decode; or, for a format that is a layer over a store (a reference set,
// an Icechunk snapshot), the location the next format reads (sniffed again, group applied there).
struct Contents {
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  nlohmann::json attrs = nlohmann::json::object();
  int zarr_format = 0;  // 2 or 3 for Zarr (CF decoding differs), 0 otherwise
  // Arrays of the group the format cannot read (lazycube/unreadable_array.hpp): not in `arrays`.
  std::vector<UnreadableArray> unreadable;
};
struct Opened {
  std::optional<Contents> contents;
  std::optional<Location> next;  // the store the next format reads, at its root
};

struct Format {
  std::string engine;    // the name users give as engine= ("zarr", "icechunk", "kerchunk", "gdal")
  std::string describe;  // what it reads, for messages and docs
  int order = 100;       // sniffing order, smaller first (the fallback format last)
  // Keys of the format options document this format takes, with their JSON types for messages.
  std::vector<std::pair<std::string, std::string>> option_keys;
  // Values of its keys that ask for nothing another format does not do anyway (JSON text:
  // missing_chunks "fill"): accepted whichever format reads, where other values of the key are
  // refused for a format that does not take it.
  std::vector<std::pair<std::string, std::string>> neutral_values;
  // Parses and checks this format's keys of the document (UsageError naming a bad value); called
  // before anything is read, whether or not the format is chosen.
  std::function<void(const nlohmann::json& document)> check_options;
  // Whether `group` applies (a hierarchy of nodes).
  bool has_nodes = false;

  // Recognition from the URL alone (a suffix, a scheme, a local file's first bytes), before any
  // store is opened; null for formats that are recognised in a store. `opened_by_url` opens it.
  std::function<bool(std::string_view url)> claims_url;
  std::function<Opened(std::string_view url, const Request& request)> open_url;

  // Recognition inside a store: the keys to fetch in the sniffing round (ByteRequest keys in
  // the store, ranges allowed), and the decision from their answers.
  std::function<std::vector<ByteRequest>(const Sniff& sniff, const Request& request)> probes;
  std::function<bool(const Sniff& sniff)> recognises;
  std::function<Opened(const Sniff& sniff, const Request& request)> open_location;
};

class Registry {
 public:
  // UsageError when the engine name is taken (a build error, caught by tests).
  void add(Format format);
  const std::vector<Format>& formats() const { return formats_; }  // in sniffing order
  const Format* find(std::string_view engine) const;

 private:
  std::vector<Format> formats_;
};

// The registry, filled once (thread-safe) by the generated register_all_formats.
const Registry& registry();
// Generated by the build from the LAZYCUBE_REGISTER_FORMAT lines of the formats layer's files.
void register_all_formats(Registry& registry);

// "'zarr', 'icechunk', ... (or empty for auto-detection)" for messages.
std::string engines_text();
// The format that reads `url` from the URL alone (`engine` if given and it is such a format,
// else the first whose claims_url takes it), or nullptr when a store must be opened and
// sniffed; UsageError for an unknown `engine`.
const Format* url_format(std::string_view url, std::string_view engine = {});

// Opens `url` (the store's layers applied: persistent cache, ...) and hands the format that
// reads it the request. UsageError for an unknown engine or a format option no format of the
// chain takes; NotFound / MetadataError / StoreError from the format.
Contents open(std::string_view url, const Request& request);
// The same over an opened location (storage options not used); formats claimed by URL only
// (GDAL) cannot open a location.
Contents open(const Location& location, const Request& request);

}  // namespace lazycube::format

#define LAZYCUBE_REGISTER_FORMAT(ident) \
  void lazycube_register_format_##ident(::lazycube::format::Registry& registry)
