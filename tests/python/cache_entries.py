"""The persistent chunk cache's files, checked from outside by the header layout every format
version shares (src/store/disk_cache_store.cpp): magic "LZCACHE<version>", identity length,
payload length, payload checksum (8 bytes each), then the identity text and the payload. Entries
end in .lcc; a publish in progress is a ".tmp-PID-N" file. The checksum itself is the cache's to
verify (a reader drops an entry that fails it): tests compare the values read through the cache."""

import struct


def entry_whole(path):
    """The cache file at `path` is as long as its header says: not torn."""
    data = path.read_bytes()
    if len(data) < 32 or not data.startswith(b"LZCACHE"):
        return False
    id_len, n, _checksum = struct.unpack("<QQQ", data[8:32])
    return 32 + id_len + n == len(data)


def entries(cache):
    return sorted(cache.glob("*.lcc"))

