"""The persistent chunk cache's files, checked from outside (format: src/store/disk_cache_store.cpp):
a header (magic "LZCACHE1", identity length, payload length, FNV-1a 64 of the payload), the
identity text, the payload. Entries end in .lcc; a publish in progress is a ".tmp-PID-N" file."""

import struct

_FNV_OFFSET, _FNV_PRIME, _MASK = 1469598103934665603, 1099511628211, 0xFFFFFFFFFFFFFFFF


def entry_intact(path):
    """The cache file at `path` is whole and its payload matches its checksum."""
    data = path.read_bytes()
    if len(data) < 32 or data[:8] != b"LZCACHE1":
        return False
    id_len, n, checksum = struct.unpack("<QQQ", data[8:32])
    if 32 + id_len + n != len(data):
        return False
    h = _FNV_OFFSET
    for byte in data[32 + id_len:]:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h == checksum


def entries(cache):
    return sorted(cache.glob("*.lcc"))


def publishing(cache):
    """Temporary files of publishes (left only by a process killed while publishing)."""
    return sorted(cache.glob(".tmp-*"))
