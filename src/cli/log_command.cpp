// lazycube log URL [--branch|--tag|--snapshot] [--json]: an Icechunk repository's history,
// newest first, amended commits and anonymous (detached) snapshots marked; and the
// snapshot/time formatting info shares.
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace lazycube::cli {

std::string iso_utc(std::uint64_t microseconds) {
  const auto seconds = static_cast<std::time_t>(microseconds / 1000000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[64];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06lluZ", static_cast<unsigned long long>(microseconds % 1000000));
  return std::string(text, n) + fraction;
}

nlohmann::ordered_json snapshot_json(const icechunk::SnapshotInfo& snapshot) {
  nlohmann::ordered_json j;
  j["id"] = snapshot.id;
  j["written_at"] = iso_utc(snapshot.written_at_us);
  j["message"] = snapshot.message;
  j["amends"] = snapshot.amends.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(snapshot.amends);
  j["detached"] = snapshot.detached;
  return j;
}

int run_log(const LogArgs& args) {
  const OpenOptions options = open_options_of(args.open);
  const auto repository = icechunk::Repository::open(open_location(args.url, options.storage_options));
  const auto history = repository->history(repository->resolve(icechunk::IcechunkOptions::from_document(options.format_options).version));
  if (args.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& s : history) out.push_back(snapshot_json(s));
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto& s : history) {
      std::cout << s.id << "  " << iso_utc(s.written_at_us) << "  " << s.message;
      if (!s.amends.empty()) std::cout << "  [amends " << s.amends << "]";
      if (s.detached) std::cout << "  [detached]";
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace lazycube::cli
