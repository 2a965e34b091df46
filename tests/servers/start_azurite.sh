#!/usr/bin/env bash
# Starts Azurite's Blob service (the Azure Storage emulator, npm package azurite installed by
# scripts/setup.sh into .tools/npm) on 127.0.0.1 with a free port, storing blobs in DIR, with
# one account ACCOUNT whose SharedKey is KEY (base64). Prints the port on stdout, then runs
# Azurite in the foreground (exec: the PID of this script is Azurite's; stop it with SIGTERM).
#
#   tests/servers/start_azurite.sh DIR ACCOUNT KEY
#
# --disableTelemetry is mandatory: without it Azurite contacts an outside host, and no traffic
# may leave the machine. The endpoint is path-style: http://127.0.0.1:PORT/ACCOUNT. Azurite's own
# output goes to DIR/azurite.log (the caller may close our stdout once it has the port).
# Environment: LAZYCUBE_AZURITE  the azurite-blob executable (default .tools/npm/node_modules/.bin/azurite-blob)
set -euo pipefail
DIR="$(mkdir -p "$1" && cd "$1" && pwd)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
AZURITE="${LAZYCUBE_AZURITE:-$HERE/../../.tools/npm/node_modules/.bin/azurite-blob}"
PORT="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
echo "$PORT"
export AZURITE_ACCOUNTS="$2:$3"
exec "$AZURITE" --blobHost 127.0.0.1 --blobPort "$PORT" --location "$DIR" --silent --skipApiVersionCheck \
  --disableTelemetry >"$DIR/azurite.log" 2>&1
