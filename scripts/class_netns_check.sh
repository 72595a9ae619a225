#!/usr/bin/env bash
# The class command seen from a student's computer, i.e. from a network that is not the server's loopback
# (docs/class.md, "Starting a class"). Root only: makes a network namespace with a veth pair (server side
# 10.77.0.1, student side 10.77.0.2), starts `bash scripts/run.sh --class --server.port PORT` on a fresh
# DMLCORE_HOME and checks, from inside the namespace:
#   1. http://10.77.0.1:PORT/_stcore/health answers "ok" (the server listens on the machine's addresses);
#   2. the namespace's own 127.0.0.1:PORT refuses (the student really is on another host's network);
#   3. headless Chromium opens the address and shows Home (the dashboard's title).
# Then the same with the plain `bash scripts/run.sh` (127.0.0.1 only): step 1 must fail.
# Cleans up the namespace, the veth pair and the servers it started, whatever happens.
#
#   sudo bash scripts/class_netns_check.sh          # PORT=N to choose the port (default: a free one)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-$(python3 -c "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])")}
NS="dmlcore-student-$$"
HOST_IF="vdmS$$"
PEER_IF="vdmC$$"
SERVER_PID=""
HOME_DIR=$(mktemp -d)
[ "$(id -u)" = 0 ] || { echo "Run as root (it makes a network namespace)." >&2; exit 2; }

cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -- "-$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$NS"
ip link add "$HOST_IF" type veth peer name "$PEER_IF"
ip link set "$PEER_IF" netns "$NS"
ip addr add 10.77.0.1/24 dev "$HOST_IF"
ip link set "$HOST_IF" up
ip netns exec "$NS" ip addr add 10.77.0.2/24 dev "$PEER_IF"
ip netns exec "$NS" ip link set "$PEER_IF" up
ip netns exec "$NS" ip link set lo up

start() {   # start() [--class]: the server in a process group of its own (so that cleanup can end it)
  DMLCORE_HOME="$HOME_DIR" DMLCORE_SKIP_SETUP=1 setsid bash scripts/run.sh "$@" --server.port "$PORT" \
    --server.headless true > "$HOME_DIR/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 120); do
    curl -s "http://127.0.0.1:$PORT/_stcore/health" 2>/dev/null | grep -q ok && return 0
    sleep 0.5
  done
  echo "FAIL: the server did not start; its log:" >&2; cat "$HOME_DIR/server.log" >&2; exit 1
}
stop() { kill -- "-$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }

start --class
echo "run.sh --class printed:"; sed -n '1,/Teacher code/p' "$HOME_DIR/server.log" | sed 's/^/    /'
grep -q "http://.*:$PORT" "$HOME_DIR/server.log" || { echo "FAIL: no address printed" >&2; exit 1; }
health=$(ip netns exec "$NS" curl -s -m 5 "http://10.77.0.1:$PORT/_stcore/health" || true)
[ "$health" = ok ] || { echo "FAIL: from the namespace, http://10.77.0.1:$PORT answered '$health'" >&2; exit 1; }
echo "ok: from the namespace, http://10.77.0.1:$PORT/_stcore/health answered ok"
if ip netns exec "$NS" curl -s -m 3 "http://127.0.0.1:$PORT/_stcore/health" >/dev/null 2>&1; then
  echo "FAIL: the namespace's own loopback answered: the check is not on another network" >&2; exit 1
fi
echo "ok: the namespace's own 127.0.0.1:$PORT refused"
title=$(ip netns exec "$NS" .venv/bin/python - "$PORT" <<'PY'
import sys
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"http://10.77.0.1:{sys.argv[1]}", timeout=120_000)
    page.get_by_role("heading", name="dmlcore").first.wait_for(timeout=120_000)
    print(page.get_by_role("heading", name="dmlcore").first.inner_text().strip())
    browser.close()
PY
)
echo "ok: headless Chromium in the namespace opened Home: '$title'"
stop

start
if ip netns exec "$NS" curl -s -m 3 "http://10.77.0.1:$PORT/_stcore/health" >/dev/null 2>&1; then
  echo "FAIL: the plain run.sh answered from another network" >&2; exit 1
fi
echo "ok: the plain run.sh (127.0.0.1) did not answer from the namespace"
stop
echo "PASS: the class command serves a student on another network; the plain one does not"
