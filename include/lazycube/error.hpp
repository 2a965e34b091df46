// Typed errors raised by every layer. Each carries a human-readable message that names
// what was wrong (key, path, codec, dim); Python maps them to built-in exception classes.
#pragma once

#include <stdexcept>
#include <string>

namespace lazycube {

// Root of the hierarchy: catch this to handle any lazycube failure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A load given up because its caller stopped (fetch-ahead stopping mid-round). A reader that
// joined such a load loads the unit itself: this never reaches a caller that did not cancel.
class Cancelled : public Error {
 public:
  using Error::Error;
};

// The store could not deliver bytes (I/O failure, permission, network).
class StoreError : public Error {
 public:
  using Error::Error;
};

// The server refused the credentials (HTTP 401/403): never retried. The message names the
// status and the server's error code, e.g. "403 SignatureDoesNotMatch".
class AuthError : public StoreError {
 public:
  using StoreError::StoreError;
};

// A key, path, array, variable or group does not exist.
class NotFound : public StoreError {
 public:
  using StoreError::StoreError;
};

// Encoded data could not be decoded: unknown codec, corrupt or truncated stream, bad checksum.
class CodecError : public Error {
 public:
  using Error::Error;
};

// Metadata (.zarray, zarr.json, attributes) is malformed or unsupported.
class MetadataError : public Error {
 public:
  using Error::Error;
};

// A selection (isel/sel) is invalid: unknown dim, index out of range, label not found.
class SelectionError : public Error {
 public:
  using Error::Error;
};

// Values that had to be present are missing (NaN or a CF fill value), e.g. in a forecast
// sample with missing="error"; the message names the variable and the time.
class MissingDataError : public Error {
 public:
  using Error::Error;
};

// Caller misuse of the API (wrong buffer size, wrong dtype requested).
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace lazycube
