// az:// (abfs://, abfss://, https://ACCOUNT.blob.core.windows.net): Azure Blob Storage on the
// HTTP-object core, signed with SharedKey, a SAS appended to each URL, or anonymous; listed with
// List Blobs (markers).
#include "azure_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "azure_protocol.hpp"
#include "backend_registry.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"
#include "object_store.hpp"
#include "vsi_mapping.hpp"

namespace lazycube::cloud {

namespace {

std::string strip_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  while (!s.empty() && s.front() == '/') s.erase(0, 1);
  return s;
}

}  // namespace

std::string AzureSettings::describe() const {
  const std::string who = account.empty() ? "" : " for account '" + account + "'";
  switch (auth) {
    case Auth::SharedKey: return "SharedKey" + who + " from " + source;
    case Auth::Sas: return "SAS token" + who + " from " + source;
    case Auth::Anonymous: break;
  }
  return "anonymous" + who;
}

AzureSettings resolve_azure_settings(const ParsedUrl& url, const StorageOptions& o) {
  AzureSettings s;
  std::string text = url.canonical();
  text.erase(std::min(text.find('?'), text.size()));  // for messages: a query may hold a SAS
  // The URL: [container@host/]path or host/container/path (https), then ?SAS (a signed URL).
  std::string rest = url.rest, url_sas;
  if (const auto q = rest.find('?'); q != std::string::npos) {
    url_sas = rest.substr(q + 1);
    rest.erase(q);
  }
  std::string host;
  if (url.scheme == "https") {
    const auto slash = rest.find('/');
    host = authority_host(rest.substr(0, slash));
    rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    const auto next = rest.find('/');
    s.container = rest.substr(0, next);
    rest = next == std::string::npos ? "" : rest.substr(next + 1);
  } else {
    const auto slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (const auto at = authority.find('@'); at != std::string::npos) {
      host = authority_host(authority.substr(at + 1));
      authority = authority.substr(0, at);
    }
    s.container = authority;
    if (s.container.empty()) throw StoreError("no container in '" + text + "'");
  }
  s.prefix = strip_slashes(rest);
  if (!host.empty()) {
    s.account = host.substr(0, host.find('.'));
    // We speak the Blob API: a Data Lake (dfs) host has the same account's blob twin.
    std::string blob_host = host;
    if (const auto dfs = blob_host.find(".dfs."); dfs != std::string::npos) blob_host.replace(dfs, 5, ".blob.");
    s.endpoint = "https://" + blob_host;
  }

  std::string conn_text = o.given.count("connection_string") ? o.own_option("connection_string") : env_or_empty("AZURE_STORAGE_CONNECTION_STRING");
  const std::string conn_source = o.given.count("connection_string") ? "the connection_string option"
                                                                      : "AZURE_STORAGE_CONNECTION_STRING";
  const auto conn = azure::parse_connection_string(conn_text);
  const auto field = [&](const char* name) {
    auto it = conn.find(name);
    return it == conn.end() ? std::string() : it->second;
  };

  if (s.account.empty()) s.account = o.own_option("account_name");
  if (s.account.empty()) s.account = field("AccountName");
  if (s.account.empty()) s.account = env_or_empty("AZURE_STORAGE_ACCOUNT_NAME");
  if (s.endpoint.empty() && !field("BlobEndpoint").empty()) {
    s.endpoint = field("BlobEndpoint");
    while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
    s.endpoint_from_connection_string = true;
  }
  if (s.endpoint.empty()) {
    if (s.account.empty())
      throw StoreError("'" + text + "' names no Azure storage account: give the account_name or connection_string "
                       "storage option, or set AZURE_STORAGE_ACCOUNT_NAME");
    const std::string protocol = field("DefaultEndpointsProtocol").empty() ? "https" : field("DefaultEndpointsProtocol");
    const std::string suffix = field("EndpointSuffix").empty() ? "core.windows.net" : field("EndpointSuffix");
    s.endpoint = protocol + "://" + s.account + ".blob." + suffix;
  }

  if (o.anon.value_or(false)) return s;
  const auto use = [&](const std::string& key, const std::string& sas, const std::string& source) {
    if (s.auth != AzureSettings::Auth::Anonymous) return;
    if (!key.empty()) {
      s.auth = AzureSettings::Auth::SharedKey;
      s.account_key = key;
    } else if (!sas.empty()) {
      s.auth = AzureSettings::Auth::Sas;
      s.sas_token = sas.starts_with('?') ? sas.substr(1) : sas;
    } else {
      return;
    }
    s.source = source;
  };
  use("", url_sas, "the URL");
  use(o.own_option("account_key"), o.own_option("sas_token"), "options");
  use(field("AccountKey"), field("SharedAccessSignature"), conn_source);
  use(env_or_empty("AZURE_STORAGE_ACCOUNT_KEY"), env_or_empty("AZURE_STORAGE_SAS_TOKEN"), "the environment");
  if (s.auth == AzureSettings::Auth::SharedKey && s.account.empty())
    throw StoreError("'" + text + "': an Azure account key needs the account name (account_name, AccountName in the "
                     "connection string, or AZURE_STORAGE_ACCOUNT_NAME)");
  if (o.anon == false && s.auth == AzureSettings::Auth::Anonymous)
    throw AuthError("'" + text + "': anon=false but no Azure credentials were found (account_key, sas_token, "
                    "connection_string, or AZURE_STORAGE_* variables)");
  return s;
}

std::shared_ptr<Store> make_azure_store(const ParsedUrl& url, const StoreOptions& options) {
  const StorageOptions o = parse_storage_options(options, *url.backend);
  const AzureSettings s = resolve_azure_settings(url, o);
  ObjectStoreConfig c;
  c.scheme = "az";
  c.bucket = s.container;
  c.prefix = s.prefix;
  c.base_url = s.endpoint + (s.container.empty() ? "" : "/" + s.container);
  c.transfer = o.transfer;
  c.dialect = ListDialect::Azure;
  c.suffix_ranges = false;  // Azure answers "bytes=-N" with the whole blob (Azurite: HTTP 500)
  c.headers.push_back("x-ms-version: " + std::string(azure::kApiVersion));
  if (s.auth == AzureSettings::Auth::SharedKey) {
    c.signer = std::make_shared<azure::SharedKeySigner>(s.account, s.account_key);
    c.secrets = {s.account_key};
  } else if (s.auth == AzureSettings::Auth::Sas) {
    c.signer = std::make_shared<azure::SasSigner>(s.sas_token);
    c.secrets = {s.sas_token};
    // The signature alone, as it may appear decoded or re-encoded.
    const auto sig = s.sas_token.find("sig=");
    if (sig != std::string::npos) c.secrets.push_back(s.sas_token.substr(sig + 4, s.sas_token.find('&', sig) - sig - 4));
  }
  if (o.given.count("connection_string")) c.secrets.push_back(o.own_option("connection_string"));
  c.auth_description = s.describe();
  return make_object_store(std::move(c));
}

namespace {

Location open_az(const ParsedUrl& url, const StoreOptions& options) { return {make_azure_store(url, options), ""}; }

// GDAL's /vsiaz/ with the same account, endpoint (a connection string's BlobEndpoint: Azurite)
// and credentials as our store.
VsiLocation vsi_az(const ParsedUrl& url, const StorageOptions& o) {
  const AzureSettings s = resolve_azure_settings(url, o);
  const std::string text = url.canonical();
  if (s.container.empty() || s.prefix.empty())
    throw StoreError("no container or blob name in '" + text + "' (a file inside a container is needed)");
  if (s.account.empty())
    throw StoreError("the gdal engine needs the Azure account name for '" + text +
                     "' (account_name, AccountName in the connection string, or AZURE_STORAGE_ACCOUNT_NAME)");
  VsiLocation loc;
  loc.path = "/vsiaz/" + s.container + "/" + s.prefix;
  loc.options_path = "/vsiaz/" + s.container;  // GDAL 3.6 looks /vsiaz/ options up by container
  loc.options.emplace_back("AZURE_STORAGE_ACCOUNT", s.account);
  if (s.endpoint_from_connection_string) {
    const auto [host, https] = vsi_endpoint(s.endpoint);
    loc.options.emplace_back("CPL_AZURE_ENDPOINT", host);
    loc.options.emplace_back("CPL_AZURE_USE_HTTPS", https ? "YES" : "NO");
  }
  switch (s.auth) {
    case AzureSettings::Auth::SharedKey: loc.options.emplace_back("AZURE_STORAGE_ACCESS_KEY", s.account_key); break;
    case AzureSettings::Auth::Sas: loc.options.emplace_back("AZURE_STORAGE_SAS_TOKEN", s.sas_token); break;
    case AzureSettings::Auth::Anonymous: loc.options.emplace_back("AZURE_NO_SIGN_REQUEST", "YES"); break;
  }
  return loc;
}

}  // namespace

}  // namespace lazycube::cloud

LAZYCUBE_REGISTER_BACKEND(az) {
  using namespace lazycube;
  registry.add({.role = BackendRole::ObjectStore,
                .schemes = {"az", "abfs", "abfss"},
                .https_hosts = {"*.blob.core.windows.net", "*.dfs.core.windows.net"},
                .shared_options = {"list_page_size", "anon"},
                .own_options = {{"account_name", "string", "Azure storage account (default: AZURE_STORAGE_ACCOUNT_NAME)"},
                                {"account_key", "string", "Azure SharedKey, base64 (default: AZURE_STORAGE_ACCOUNT_KEY)"},
                                {"sas_token", "string", "Azure shared access signature (default: AZURE_STORAGE_SAS_TOKEN)"},
                                {"connection_string", "string",
                                 "Azure AccountName/AccountKey/SharedAccessSignature/BlobEndpoint (default: "
                                 "AZURE_STORAGE_CONNECTION_STRING)"}},
                .open = &cloud::open_az,
                .vsi = &cloud::vsi_az,
                .describe = "az:// (abfs://, abfss://, https://ACCOUNT.blob.core.windows.net)",
                .listing_order = 50});
}
