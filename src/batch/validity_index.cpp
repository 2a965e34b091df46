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
                                   const std::string& label, const std::string& dir, const Progress& progress) {
  using namespace validity;
  ValidityIndex out;
  const std::string where = directory(dir);
  for (const auto& var : vars) {
    const std::uint64_t T = var.dim_size(time_dim);
    const std::string id = where.empty() ? std::string() : identity(var, time_dim);
    const std::string file = id.empty() ? std::string() : where + "/" + hex16(fnv1a(id)) + ".json";
    std::vector<std::uint8_t> flags;
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

bool ValidityIndex::missing(const std::string& name, std::uint64_t t) const {
  auto it = missing_.find(name);
  return it != missing_.end() && t < it->second.size() && it->second[t] != 0;
}

}  // namespace lazycube::batch
