"""A private Azurite (Azure Blob Storage emulator) for pytest (tests/servers/start_azurite.sh),
with its own account and key, stopped by PID.

    with AzuriteServer(directory) as server:
        server.endpoint            # http://127.0.0.1:PORT/ACCOUNT
        server.connection_string   # AccountName=...;AccountKey=...;BlobEndpoint=...
"""

import os
import shutil
from pathlib import Path

from script_server import HERE, ScriptServer

REPO = HERE.parent.parent
ACCOUNT = "lazycubeacct"
# base64 of "lazycube-azurite-test-key-0123456789" (the C++ fixture's account and key too)
KEY = "bGF6eWN1YmUtYXp1cml0ZS10ZXN0LWtleS0wMTIzNDU2Nzg5"


def executable():
    return os.environ.get("LAZYCUBE_AZURITE", str(REPO / ".tools" / "npm" / "node_modules" / ".bin" / "azurite-blob"))


def unavailable_reason():
    """Why Azurite cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (Azurite needs Node.js)"
    if not Path(executable()).exists():
        return "Azurite is not installed at %s (bash scripts/setup.sh --no-build installs it)" % executable()
    try:
        import azure.storage.blob  # noqa: F401
    except ImportError:
        return "azure-storage-blob is not installed (apt-get install python3-azure)"
    return None


class AzuriteServer(ScriptServer):
    def __init__(self, directory):
        super().__init__("start_azurite.sh", [directory, ACCOUNT, KEY], "Azurite")
        self.account, self.key = ACCOUNT, KEY
        self.endpoint = "http://127.0.0.1:%d/%s" % (self.port, ACCOUNT)
        self.connection_string = ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;"
                                  % (ACCOUNT, KEY, self.endpoint))

    def client(self):
        from azure.storage.blob import BlobServiceClient
        return BlobServiceClient.from_connection_string(self.connection_string)

    def upload_tree(self, container, directory, prefix):
        """Every file under `directory`, as blobs under `prefix/` in `container`."""
        cc = self.client().get_container_client(container)
        directory = Path(directory)
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                cc.upload_blob("%s/%s" % (prefix, path.relative_to(directory).as_posix()), path.read_bytes(),
                               overwrite=True)
