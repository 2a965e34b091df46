#include "validity_index.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/stats.hpp"
#include "lazycube/error.hpp"
#include "util/file_lock.hpp"
#include "util/hash.hpp"
#include "util/local_file.hpp"
#include "util/text.hpp"

namespace lazycube::batch {

namespace {
namespace validity {

constexpr const char* kFormat = "lazycube-validity";

// What the index of `var` depends on: where its data is and which version, the selection, and
// the decoding (which values become NaN). Empty when the data's version is unknown.
std::string identity(const Variable& var, const std::string& time_dim) {
  const std::string version = var.array()->data_version();
  if (version.empty()) return {};
  std::ostringstream id;
  id << kFormat << " 1\n" << var.array()->cache_id() << "\n" << version << "\n" << var.name() << " " << time_dim << "\n";
  for (const auto& r : var.array_selection()) id << r.start << ":" << r.count << ":" << r.step << " ";
  id << "\n" << var.dtype().name() << "\n" << nlohmann::json(var.encoding()).dump() << "\n";
  return id.str();
}

void make_dirs(const std::string& dir) {
  std::string path;
  std::size_t i = 0;
  while (i <= dir.size()) {
    const auto slash = dir.find('/', i);
    path = dir.substr(0, slash == std::string::npos ? dir.size() : slash);
    if (!path.empty()) ::mkdir(path.c_str(), 0755);
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
}

}  // namespace validity
}  // namespace

std::string ValidityIndex::directory(const std::string& dir) {
  if (dir == "off") return {};
  if (!dir.empty()) return dir;
  if (const std::string d = env_or_empty("LAZYCUBE_CACHE_DIR"); !d.empty()) return d + "/validity";
  if (const std::string d = env_or_empty("XDG_CACHE_HOME"); !d.empty()) return d + "/lazycube/validity";
  if (const std::string d = env_or_empty("HOME"); !d.empty()) return d + "/.cache/lazycube/validity";
  return {};
}

ValidityIndex ValidityIndex::build(const std::vector<Variable>& vars, const std::string& time_dim,
                                   const std::string& label, const std::string& dir, const Progress& progress,
                                   const std::string& given) {
  using namespace validity;
  ValidityIndex out;
  const std::string where = directory(dir);
  nlohmann::json given_doc;
  std::map<std::string, const nlohmann::json*> given_entries;  // identity -> entry
  if (!given.empty()) {
    try {
      given_doc = nlohmann::json::parse(given);
      if (given_doc.at("format").get<std::string>() != kFormat) throw std::runtime_error("format");
      for (const auto& e : given_doc.at("indexes")) given_entries[e.at("identity").get<std::string>()] = &e;
    } catch (const std::exception&) {
      throw UsageError("validity_index: not a validity index of lazycube (ForecastSamples.validity_index gives one)");
    }
  }
  for (const auto& var : vars) {
    const std::uint64_t T = var.dim_size(time_dim);
    const std::string known = identity(var, time_dim);
    if (!known.empty()) out.identity_[var.name()] = known;
    std::vector<std::uint8_t> flags;
    if (auto it = given_entries.find(known); !known.empty() && it != given_entries.end()) {
      try {
        if (it->second->at("times").get<std::uint64_t>() == T) {
          flags.assign(T, 0);
          for (const auto& t : it->second->at("missing")) flags.at(t.get<std::uint64_t>()) = 1;
        }
      } catch (const std::exception&) {
        flags.clear();  // a damaged entry: built or read as without it
      }
      if (!flags.empty() || T == 0) {
        out.missing_[var.name()] = std::move(flags);
        continue;
      }
    }
    const std::string id = where.empty() ? std::string() : known;
    const std::string file = id.empty() ? std::string() : where + "/" + hex16(fnv1a(id)) + ".json";
    // One pass per job: the first process to take the lock builds the index, the others wait
    // for it and read what it wrote (ranks sharing `where`).
    std::optional<FileLock> lock;
    if (!file.empty()) {
      make_dirs(where);  // not writable: no lock, each process builds its own (reported below)
      lock.emplace(file + ".lock");
    }
    if (!file.empty()) {
      std::ifstream in(file);
      if (in) {
        try {
          const auto doc = nlohmann::json::parse(in);
          if (doc.at("identity").get<std::string>() == id && doc.at("times").get<std::uint64_t>() == T) {
            flags.assign(T, 0);
            for (const auto& t : doc.at("missing")) flags.at(t.get<std::uint64_t>()) = 1;
          }
        } catch (const std::exception&) {
          flags.clear();  // unreadable or another version's: rebuilt below
        }
      }
    }
    if (flags.empty() && T > 0) {
      out.loaded_ = false;
      const std::string what = label + ": " + var.name();
      // A line every 2 s of the pass, and a last one when any was shown (a pass shorter than
      // that stays quiet).
      auto last = std::chrono::steady_clock::now();
      bool shown = false;
      std::mutex m;
      auto report = [&](std::uint64_t done, std::uint64_t total) {
        if (progress) return progress(what, done, total);
        const auto now = std::chrono::steady_clock::now();
        std::lock_guard lock(m);
        if (done < total ? now - last < std::chrono::seconds(2) : !shown) return;
        last = now;
        shown = done < total;
        std::fprintf(stderr, "lazycube: validity index of %s: %.0f%% (%.1f of %.1f MB)\n", what.c_str(),
                     total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                     static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
      };
      const VariableStats st = compute_stats(var, {time_dim}, report);
      flags.assign(T, 0);
      for (std::uint64_t t = 0; t < T; ++t) flags[t] = st.nan_count[t] > 0 ? 1 : 0;
      if (!file.empty()) {
        nlohmann::json doc = {{"format", kFormat}, {"identity", id}, {"times", T}, {"missing", nlohmann::json::array()}};
        for (std::uint64_t t = 0; t < T; ++t)
          if (flags[t]) doc["missing"].push_back(t);
        try {
          make_dirs(where);
          write_local_file(file, doc.dump());
        } catch (const Error& e) {
          std::fprintf(stderr, "lazycube: the validity index of %s is not cached: %s\n", what.c_str(), e.what());
        }
      }
    }
    out.missing_[var.name()] = std::move(flags);
  }
  return out;
}

std::string ValidityIndex::to_json() const {
  nlohmann::json doc = {{"format", validity::kFormat}, {"indexes", nlohmann::json::array()}};
  for (const auto& [name, flags] : missing_) {
    auto id = identity_.find(name);
    if (id == identity_.end()) continue;
    nlohmann::json e = {{"identity", id->second}, {"times", flags.size()}, {"missing", nlohmann::json::array()}};
    for (std::size_t t = 0; t < flags.size(); ++t)
      if (flags[t]) e["missing"].push_back(t);
    doc["indexes"].push_back(std::move(e));
  }
  return doc.dump();
}

bool ValidityIndex::missing(const std::string& name, std::uint64_t t) const {
  auto it = missing_.find(name);
  return it != missing_.end() && t < it->second.size() && it->second[t] != 0;
}

}  // namespace lazycube::batch
