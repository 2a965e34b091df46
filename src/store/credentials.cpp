#include "credentials.hpp"

#include <cstdlib>
#include <fstream>
#include <map>

#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::cloud {

namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  auto end = s.find_last_not_of(ws);
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

using Section = std::map<std::string, std::string>;

// Reads an INI file (AWS flavour) into sections; a missing file gives no sections. Indented lines
// (nested settings such as "s3 =\n  addressing_style = path") are skipped.
std::map<std::string, Section> read_ini(const std::string& path) {
  std::map<std::string, Section> out;
  std::ifstream f(path);
  if (!f) return out;
  std::string line, section;
  bool in_section = false;
  while (std::getline(f, line)) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) continue;
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      out[section];
      in_section = true;
      continue;
    }
    auto eq = line.find('=');
    if (!in_section || eq == std::string::npos) continue;
    out[section][trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string home_file(const char* override_var, const char* relative) {
  std::string p = env_or_empty(override_var);
  if (!p.empty()) return p;
  std::string home = env_or_empty("HOME");
  return home.empty() ? std::string() : home + "/" + relative;
}

std::string get(const Section* s, const char* key) {
  if (!s) return {};
  auto it = s->find(key);
  return it == s->end() ? std::string() : it->second;
}

}  // namespace

std::string mask_key_id(const std::string& key_id) {
  if (key_id.size() < 8) return "****";
  return key_id.substr(0, 4) + "****";
}

std::string AwsCredentials::describe() const {
  if (anonymous()) return "anonymous (unsigned requests)";
  std::string d = "access key " + mask_key_id(access_key_id);
  if (!session_token.empty()) d += " with session token";
  return d + " from " + source;
}

AwsSettings resolve_aws_settings(const StorageOptions& options) {
  AwsSettings s;
  AwsCredentials& c = s.credentials;

  // The profile: read lazily, only when something needs it.
  std::string profile = options.profile;
  const bool profile_named = !profile.empty() || !env_or_empty("AWS_PROFILE").empty();
  if (profile.empty()) profile = env_or_empty("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  const std::string cred_path = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  const std::string config_path = home_file("AWS_CONFIG_FILE", ".aws/config");
  const auto cred_ini = cred_path.empty() ? std::map<std::string, Section>{} : read_ini(cred_path);
  const auto config_ini = config_path.empty() ? std::map<std::string, Section>{} : read_ini(config_path);
  const Section* cred_section = nullptr;
  if (auto it = cred_ini.find(profile); it != cred_ini.end()) cred_section = &it->second;
  const Section* config_section = nullptr;
  const std::string config_name = profile == "default" ? "default" : "profile " + profile;
  if (auto it = config_ini.find(config_name); it != config_ini.end()) config_section = &it->second;
  else if (auto it2 = config_ini.find(profile); it2 != config_ini.end()) config_section = &it2->second;

  if (options.anon.value_or(false)) {
    // anonymous: nothing to sign with
  } else if (!options.key.empty() || !options.secret.empty()) {
    if (options.key.empty() || options.secret.empty())
      throw StoreError(std::string("S3 credentials: option '") + (options.key.empty() ? "secret" : "key") +
                       "' given without '" + (options.key.empty() ? "key" : "secret") + "'");
    c = {options.key, options.secret, options.token, "options"};
  } else if (!env_or_empty("AWS_ACCESS_KEY_ID").empty() && !env_or_empty("AWS_SECRET_ACCESS_KEY").empty()) {
    c = {env_or_empty("AWS_ACCESS_KEY_ID"), env_or_empty("AWS_SECRET_ACCESS_KEY"), env_or_empty("AWS_SESSION_TOKEN"), "environment"};
  } else {
    if (profile_named && !cred_section && !config_section)
      throw StoreError("AWS profile '" + profile + "' not found in " +
                       (cred_path.empty() ? std::string("(no credentials file)") : cred_path) + " or " +
                       (config_path.empty() ? std::string("(no config file)") : config_path));
    for (auto [section, path] : {std::pair{cred_section, cred_path}, std::pair{config_section, config_path}}) {
      std::string id = get(section, "aws_access_key_id"), secret = get(section, "aws_secret_access_key");
      if (!id.empty() && !secret.empty()) {
        c = {id, secret, get(section, "aws_session_token"), "profile '" + profile + "' (" + path + ")"};
        break;
      }
    }
  }

  s.region = options.region_name;
  if (s.region.empty()) s.region = env_or_empty("AWS_REGION");
  if (s.region.empty()) s.region = env_or_empty("AWS_DEFAULT_REGION");
  if (s.region.empty()) s.region = get(config_section, "region");
  if (s.region.empty()) s.region = get(cred_section, "region");
  if (s.region.empty()) s.region = "us-east-1";

  s.endpoint_url = options.endpoint_url;
  if (s.endpoint_url.empty()) s.endpoint_url = env_or_empty("AWS_ENDPOINT_URL_S3");
  if (s.endpoint_url.empty()) s.endpoint_url = env_or_empty("AWS_ENDPOINT_URL");
  while (!s.endpoint_url.empty() && s.endpoint_url.back() == '/') s.endpoint_url.pop_back();
  return s;
}

std::string GcsAuth::describe() const {
  switch (kind) {
    case Kind::Hmac: return "HMAC key " + mask_key_id(key) + " from " + source;
    case Kind::Bearer: return "OAuth2 bearer token from " + source;
    case Kind::ServiceAccount:
      return "service account " + service_account.client_email + " (key file from " + source + ")";
    default: return "anonymous (unsigned requests)";
  }
}

GcsAuth resolve_gcs_auth(const StorageOptions& o) {
  if (o.requester_pays)
    throw StoreError("gs:// option 'requester_pays' is not supported yet (it needs a billing project)");
  GcsAuth a;
  std::string token = o.token, token_source = "option 'token'";
  if (token.empty() && !o.anon.value_or(false)) {
    token = env_or_empty("GOOGLE_OAUTH_ACCESS_TOKEN");
    token_source = "GOOGLE_OAUTH_ACCESS_TOKEN";
  }
  if (o.anon.value_or(false) || token == "anon") return a;
  for (const char* method : {"google_default", "cloud", "cache", "browser"})
    if (token == method)
      throw StoreError(std::string("gs:// token '") + method +
                       "' is not supported (it needs gcloud or Google's metadata server); give token=KEY.json "
                       "(a service-account key file), set GOOGLE_APPLICATION_CREDENTIALS, or give an access token");
  const bool key_path = token.find('/') != std::string::npos || token.ends_with(".json");
  if (!o.key.empty() || !o.secret.empty()) {
    if (o.key.empty() || o.secret.empty())
      throw StoreError(std::string("gs:// HMAC credentials: option '") + (o.key.empty() ? "secret" : "key") +
                       "' given without '" + (o.key.empty() ? "key" : "secret") + "'");
    a.kind = GcsAuth::Kind::Hmac;
    a.key = o.key;
    a.secret = o.secret;
    a.region = o.region_name.empty() ? "auto" : o.region_name;
    a.source = "options";
  } else if (!token.empty() && key_path) {
    a.kind = GcsAuth::Kind::ServiceAccount;
    a.service_account = read_gcs_service_account_key(token);
    a.source = token_source;
  } else if (!token.empty()) {
    a.kind = GcsAuth::Kind::Bearer;
    a.token = token;
    a.source = token_source;
  } else if (const std::string path = env_or_empty("GOOGLE_APPLICATION_CREDENTIALS"); !path.empty()) {
    a.kind = GcsAuth::Kind::ServiceAccount;
    a.service_account = read_gcs_service_account_key(path);
    a.source = "GOOGLE_APPLICATION_CREDENTIALS";
  }
  return a;
}

}  // namespace lazycube::cloud
