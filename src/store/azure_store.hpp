// How an Azure URL and its storage options resolve: account, container, endpoint and
// credentials. Shared by the az backend (azure_store.cpp) and the GDAL mapping (/vsiaz/).
#pragma once

#include <string>

#include "storage_options.hpp"
#include "url_scheme.hpp"

namespace lazycube::cloud {

struct AzureSettings {
  enum class Auth { Anonymous, SharedKey, Sas };
  std::string account;    // may be empty only when `endpoint` came from a connection string
  std::string container;  // "" for https://ACCOUNT.blob.core.windows.net (kerchunk targets)
  std::string prefix;     // path inside the container, no leading/trailing '/'
  std::string endpoint;   // the Blob service URL, no trailing '/': https://ACCOUNT.blob.core.windows.net,
                          // or a connection string's BlobEndpoint (Azurite: http://127.0.0.1:PORT/ACCOUNT)
  bool endpoint_from_connection_string = false;
  Auth auth = Auth::Anonymous;
  std::string account_key;  // SharedKey, base64
  std::string sas_token;    // without '?'
  std::string source;       // where the credentials came from: "options", "connection string", "environment"
  // For messages: the kind of credentials, account and source; never a key or signature.
  std::string describe() const;
};

// Resolves `url` (az://container/path, abfs[s]://container@ACCOUNT.dfs.core.windows.net/path,
// https://ACCOUNT.blob.core.windows.net/container/path) with `options`:
//   account: the URL's host → `account_name` → the connection string's AccountName →
//     AZURE_STORAGE_ACCOUNT_NAME;
//   connection string: `connection_string` → AZURE_STORAGE_CONNECTION_STRING;
//   credentials (unless `anon`): the URL's query string (a signed URL: ...?sv=...&sig=...) →
//     `account_key`, `sas_token` → the connection string's AccountKey,
//     SharedAccessSignature → AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN → anonymous;
//   endpoint: the URL's host → the connection string's BlobEndpoint → PROTOCOL://ACCOUNT.blob.SUFFIX.
// Throws StoreError naming what is missing (never a secret).
AzureSettings resolve_azure_settings(const ParsedUrl& url, const StorageOptions& options);

}  // namespace lazycube::cloud
