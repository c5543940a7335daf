#!/usr/bin/env bash
# The MapServer peer of `npm run bench:serve`: Debian's cgi-mapserver (MapServer 8) as 2 FastCGI
# workers (spawn-fcgi) behind lighttpd, on loopback only, everything under $PEERS (default
# /tmp/rasterflow-mapserver-peer). The config, mapfile and lighttpd front are the ones of the peer's
# reproduction notes (section 2 to 4): WMS GetMap of the DEM with PROCESSING "SCALE=AUTO" to 8-bit PNG.
#
# usage: bench/serve/mapserver.sh start <dem.tif> [http_port=8089] [fcgi_port=9009] [workers=2]
#        bench/serve/mapserver.sh stop
# `start` prints the GetMap base URL on its last line and exits 0 once a GetMap answers a PNG;
# it exits 3 (printing why) when the peer cannot be started (packages missing, port in use, ...).
# `stop` stops the processes it started, by the PIDs it recorded, and nothing else.
set -u
PEERS=${PEERS:-/tmp/rasterflow-mapserver-peer}
MAPSERV=/usr/lib/cgi-bin/mapserv

stop() {
  local pids=""
  [ -f "$PEERS/run/mapserv-fcgi.pid" ] && pids="$pids $(tr '\n' ' ' < "$PEERS/run/mapserv-fcgi.pid")"
  [ -f "$PEERS/run/lighttpd-D.pid" ] && pids="$pids $(cat "$PEERS/run/lighttpd-D.pid")"
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  [ -n "${pids// /}" ] && sleep 2
  # A mapserv FastCGI worker blocked in accept() only exits on its next request after SIGTERM: KILL
  # the leftovers, the same PIDs only.
  for p in $pids; do kill -0 "$p" 2>/dev/null && kill -KILL "$p"; done
  rm -f "$PEERS/run/mapserv-fcgi.pid" "$PEERS/run/lighttpd-D.pid"
  return 0
}

fail() {
  echo "mapserver peer: $*" >&2
  stop
  exit 3
}

start() {
  local dem=${1:?usage: mapserver.sh start <dem.tif> [http_port] [fcgi_port] [workers]}
  local http_port=${2:-8089} fcgi_port=${3:-9009} workers=${4:-2}
  for tool in spawn-fcgi lighttpd; do command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (apt-get install cgi-mapserver lighttpd spawn-fcgi)"; done
  [ -x "$MAPSERV" ] || fail "$MAPSERV is not installed (apt-get install cgi-mapserver)"
  [ -f "$dem" ] || fail "no DEM at $dem"
  for port in "$http_port" "$fcgi_port"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "127.0.0.1:$port is already in use"; fi
  done
  stop
  mkdir -p "$PEERS"/{data,mapfiles,logs,run,tmp,www}
  # A private copy of the DEM; GDAL_PAM_ENABLED=NO: no .aux.xml sidecar is written anywhere.
  cp "$dem" "$PEERS/data/dem.tif"
  local ext
  ext=$(gdalinfo -json "$PEERS/data/dem.tif" 2>/dev/null | python3 -c 'import json,sys; c=json.load(sys.stdin)["cornerCoordinates"]; print(c["lowerLeft"][0], c["lowerLeft"][1], c["upperRight"][0], c["upperRight"][1])' 2>/dev/null) \
    || ext="732000 4037625 760725 4068150"
  cat > "$PEERS/mapserver.conf" <<EOF
CONFIG
  ENV
    MS_MAP_PATTERN "^$PEERS/mapfiles/"
    MS_ERRORFILE "$PEERS/logs/ms_error.log"
  END
  MAPS
    DEM "$PEERS/mapfiles/dem.map"
  END
END
EOF
  cat > "$PEERS/mapfiles/dem.map" <<EOF
MAP
  NAME "rasterflow_peer_dem"
  STATUS ON
  SIZE 512 512
  EXTENT $ext
  UNITS METERS
  MAXSIZE 4096
  IMAGECOLOR 0 0 0
  CONFIG "GDAL_PAM_ENABLED" "NO"
  CONFIG "MS_ERRORFILE" "$PEERS/logs/ms_error.log"
  DEBUG 0
  PROJECTION
    "init=epsg:32616"
  END
  OUTPUTFORMAT
    NAME "png8"
    DRIVER "AGG/PNG8"
    MIMETYPE "image/png"
    IMAGEMODE RGB
    EXTENSION "png"
    FORMATOPTION "QUANTIZE_FORCE=on"
    FORMATOPTION "QUANTIZE_COLORS=256"
  END
  OUTPUTFORMAT
    NAME "png"
    DRIVER "AGG/PNG"
    MIMETYPE "image/png; mode=8bit"
    IMAGEMODE RGB
    EXTENSION "png"
  END
  WEB
    IMAGEPATH "$PEERS/tmp/"
    METADATA
      "wms_title"           "rasterflow peer DEM"
      "wms_onlineresource"  "http://127.0.0.1:$http_port/mapserv?"
      "wms_srs"             "EPSG:32616 EPSG:3857 EPSG:4326"
      "wms_enable_request"  "*"
      "wms_getmap_formatlist" "image/png,image/png; mode=8bit"
    END
  END
  LAYER
    NAME "dem"
    TYPE RASTER
    STATUS ON
    DATA "$PEERS/data/dem.tif"
    PROJECTION
      "init=epsg:32616"
    END
    PROCESSING "SCALE=AUTO"
    PROCESSING "RESAMPLE=BILINEAR"
    METADATA
      "wms_title" "dem"
      "wms_srs"   "EPSG:32616 EPSG:3857 EPSG:4326"
    END
  END
END
EOF
  cat > "$PEERS/lighttpd.conf" <<EOF
server.document-root = "$PEERS/www"
server.bind          = "127.0.0.1"
server.port          = $http_port
server.modules       = ( "mod_fastcgi" )
server.errorlog      = "$PEERS/logs/lighttpd-error.log"
server.pid-file      = "$PEERS/run/lighttpd.pid"
server.max-connections = 256
fastcgi.server = (
  "/mapserv" => ((
    "host" => "127.0.0.1",
    "port" => $fcgi_port,
    "check-local" => "disable"
  ))
)
EOF
  export MAPSERVER_CONFIG_FILE="$PEERS/mapserver.conf"
  spawn-fcgi -a 127.0.0.1 -p "$fcgi_port" -F "$workers" -P "$PEERS/run/mapserv-fcgi.pid" -- "$MAPSERV" > "$PEERS/logs/spawn-fcgi.log" 2>&1 \
    || fail "spawn-fcgi failed: $(cat "$PEERS/logs/spawn-fcgi.log")"
  lighttpd -D -f "$PEERS/lighttpd.conf" > "$PEERS/logs/lighttpd-stdout.log" 2>&1 &
  echo $! > "$PEERS/run/lighttpd-D.pid"
  local base="http://127.0.0.1:$http_port/mapserv?map=DEM&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=dem&STYLES=&CRS=EPSG:32616&FORMAT=image/png"
  local probe="$base&BBOX=${ext// /,}&WIDTH=64&HEIGHT=64"
  for _ in $(seq 1 50); do
    if python3 - "$probe" <<'EOF' 2>/dev/null; then
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    body = r.read()
sys.exit(0 if r.status == 200 and body[:8] == b"\x89PNG\r\n\x1a\n" else 1)
EOF
      echo "$base"
      return 0
    fi
    sleep 0.1
  done
  fail "GetMap did not answer a PNG: $(tail -3 "$PEERS/logs/lighttpd-error.log" "$PEERS/logs/ms_error.log" 2>/dev/null)"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  *) echo "usage: $0 start <dem.tif> [http_port] [fcgi_port] [workers] | stop" >&2; exit 2 ;;
esac
