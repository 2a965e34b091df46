-- Fault injector (access phase). PREFIX/faults.lua returns a table, re-read on every request:
--   latency_ms   added delay before any answer
--   p503, p429, pdrop, ptrunc   probabilities of: 503 with an XML error body; 429 with
--                Retry-After; a dropped connection (no reply); a body cut in half while
--                Content-Length promises all of it, then the connection closed
--   retry_after  Retry-After seconds sent with 429 (default 0)
--   fail_first   the first N requests of each URI+Range get 429 (deterministic retries)
--   fail_uri     if set, fail_first applies only to this URI (e.g. "/o2"): one slow request
--   cache_control  a Cache-Control header sent with every reply (e.g. "public, max-age=3600",
--                what GCS sends for public objects), for the persistent cache's freshness
--   bearer_tokens  path of a file of "TOKEN EXPIRY_EPOCH" lines (tests/servers/gcs_token_server.py
--                writes it): requests need "Authorization: Bearer TOKEN" with a listed token not yet
--                expired, else 401 with a GCS-style XML error (checked after the latency)
local chunk = loadfile(ngx.config.prefix() .. "faults.lua")
local cfg = chunk and chunk() or {}

if (cfg.latency_ms or 0) > 0 then ngx.sleep(cfg.latency_ms / 1000) end
if cfg.cache_control then ngx.header["Cache-Control"] = cfg.cache_control end

if cfg.bearer_tokens then
  local auth = ngx.var.http_authorization or ""
  local token = auth:match("^Bearer (%S+)$")
  local valid = false
  local fh = token and io.open(cfg.bearer_tokens, "r")
  if fh then
    for line in fh:lines() do
      local t, expiry = line:match("^(%S+) (%S+)$")
      if t == token and tonumber(expiry) > ngx.now() then valid = true end
    end
    fh:close()
  end
  if not valid then
    ngx.status = 401
    ngx.header["Content-Type"] = "application/xml"
    ngx.print("<Error><Code>AuthenticationRequired</Code><Message>" ..
              (token and "Invalid or expired Credentials" or "No bearer token") .. "</Message></Error>")
    return ngx.exit(ngx.HTTP_OK)
  end
end

local function too_many()
  ngx.status = 429
  ngx.header["Retry-After"] = tostring(cfg.retry_after or 0)
  ngx.header["Content-Type"] = "application/xml"
  ngx.print("<Error><Code>SlowDown</Code><Message>injected 429</Message></Error>")
  return ngx.exit(ngx.HTTP_OK)
end

if (cfg.fail_first or 0) > 0 and (cfg.fail_uri == nil or cfg.fail_uri == ngx.var.uri) then
  local key = ngx.var.uri .. "|" .. (ngx.var.http_range or "")
  local n = ngx.shared.fault_counts:incr(key, 1, 0)
  if n <= cfg.fail_first then return too_many() end
end

local r = math.random()
local acc = 0
local function hit(p)
  acc = acc + (p or 0)
  return r < acc
end

if hit(cfg.p503) then
  ngx.status = 503
  ngx.header["Content-Type"] = "application/xml"
  ngx.print("<Error><Code>ServiceUnavailable</Code><Message>injected 503</Message></Error>")
  return ngx.exit(ngx.HTTP_OK)
end
if hit(cfg.p429) then return too_many() end
if hit(cfg.pdrop) then return ngx.exit(444) end
if hit(cfg.ptrunc) then
  local fh = io.open(ngx.var.request_filename, "rb")
  if not fh then return end -- let nginx answer 404
  local data = fh:read("*a")
  fh:close()
  if data == nil then return end
  local size = #data
  local first, last = 0, size - 1
  local range = ngx.var.http_range
  if range then
    local a, b = range:match("^bytes=(%d*)%-(%d*)$")
    if a == nil then return end
    if a == "" then
      first = math.max(0, size - tonumber(b))
    else
      first = tonumber(a)
      if b ~= "" then last = math.min(tonumber(b), size - 1) end
    end
    if first >= size then return end -- let nginx answer 416
    ngx.status = 206
    ngx.header["Content-Range"] = string.format("bytes %d-%d/%d", first, last, size)
  else
    ngx.status = 200
  end
  local n = last - first + 1
  if n < 2 then return end
  ngx.header["Content-Length"] = n
  ngx.header["Content-Type"] = "application/octet-stream"
  ngx.print(data:sub(first + 1, first + math.floor(n / 2)))
  ngx.flush(true)
  return ngx.exit(ngx.ERROR)
end
