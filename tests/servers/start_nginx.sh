#!/usr/bin/env bash
# Starts nginx on 127.0.0.1 with a free port, serving ROOT, with the lua fault injector
# (tests/servers/faults.lua) in front of every file. Prints the port on stdout, then runs nginx
# in the foreground (exec: the PID of this script is the nginx master; stop it with SIGTERM).
#
#   tests/servers/start_nginx.sh PREFIX ROOT [tls]
#
# With "tls": HTTPS + HTTP/2 with a fresh self-signed certificate for 127.0.0.1 in
# PREFIX/tls/cert.pem (give it to the client as its CA file).
#
# Faults are read on each request from PREFIX/faults.lua, a Lua chunk returning a table
# (see faults.lua); rewrite it to change them. The access log is PREFIX/logs/access.log, one line
# per request: CONNECTION_ID REQUESTS_ON_CONNECTION STATUS "REQUEST" RANGE BYTES PROTOCOL.
#
# Environment: LAZYCUBE_NGINX_WORKERS  worker processes (default 1; benchmarks use one per core).
# Files go out with sendfile, as in Debian's default nginx.conf (the injected faults are written
# by the lua access handler and do not need a body filter).
set -euo pipefail
PREFIX="$(mkdir -p "$1" && cd "$1" && pwd)"
ROOT="$(cd "$2" && pwd)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODULES=/usr/lib/nginx/modules
PORT="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$PREFIX/logs" "$PREFIX/tmp"
[ -f "$PREFIX/faults.lua" ] || echo 'return {}' > "$PREFIX/faults.lua"
LISTEN="127.0.0.1:$PORT"
TLS_LINES=""
if [ "${3:-}" = tls ]; then
  mkdir -p "$PREFIX/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$PREFIX/tls/key.pem" -out "$PREFIX/tls/cert.pem" 2>/dev/null
  LISTEN="127.0.0.1:$PORT ssl http2"
  TLS_LINES="ssl_certificate $PREFIX/tls/cert.pem; ssl_certificate_key $PREFIX/tls/key.pem;"
fi
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"
cat > "$PREFIX/nginx.conf" <<CONF
load_module $MODULES/ndk_http_module.so;
load_module $MODULES/ngx_http_lua_module.so;
daemon off;
worker_processes ${LAZYCUBE_NGINX_WORKERS:-1};
$USER_LINE
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
  log_format lazycube '\$connection \$connection_requests \$status "\$request" \$http_range \$body_bytes_sent \$server_protocol';
  access_log logs/access.log lazycube;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  lua_shared_dict fault_counts 4m;
  server {
    listen $LISTEN;
    $TLS_LINES
    root $ROOT;
    location /forbidden/ {
      default_type application/xml;
      return 403 '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied by test policy</Message></Error>';
    }
    location /unauthorized/ {
      default_type application/xml;
      return 401 '<Error><Code>InvalidAccessKeyId</Code><Message>The key does not exist</Message></Error>';
    }
    location / {
      access_by_lua_file $HERE/faults.lua;
    }
  }
}
CONF
echo "$PORT"
exec nginx -p "$PREFIX/" -c nginx.conf
