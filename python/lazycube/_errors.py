"""lazycube's exception classes. The compiled core raises these for the C++ errors
(include/lazycube/error.hpp); each also derives from the built-in exception Python code
expects for that kind of failure, and ``str(e)`` is the C++ message unchanged."""

__all__ = [
    "Error",
    "NotFoundError",
    "SelectionError",
    "UsageError",
    "StoreError",
    "AuthError",
    "CodecError",
    "MetadataError",
    "MissingDataError",
]


class Error(Exception):
    """Root of lazycube's errors."""

    def __str__(self):
        # KeyError quotes its message (repr); keep the C++ message as it is for every subclass.
        if len(self.args) == 1 and isinstance(self.args[0], str):
            return self.args[0]
        return super().__str__()


class NotFoundError(Error, FileNotFoundError, KeyError):
    """A path, key, array, variable or group does not exist."""


class SelectionError(Error, KeyError, IndexError):
    """An invalid isel/sel: unknown dim, index out of range, label not found."""


class UsageError(Error, ValueError):
    """Caller misuse: bad option, window longer than the dim, wrong dtype."""


class StoreError(Error, OSError):
    """The store could not deliver bytes (I/O, network, permission)."""


class AuthError(StoreError, PermissionError):
    """The server refused the credentials (HTTP 401/403)."""


class CodecError(Error, ValueError):
    """Encoded data could not be decoded (unknown codec, corrupt stream, bad checksum)."""


class MetadataError(Error, ValueError):
    """Metadata is malformed or unsupported."""


class MissingDataError(Error, ValueError):
    """Values that had to be present are missing (NaN or a fill value): a forecast sample with
    ``missing="error"``. The message names the variable and the time."""
