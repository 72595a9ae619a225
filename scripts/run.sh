#!/usr/bin/env bash
# Set up (first time) and start the dashboard with the simulated demo data.
#
#   bash scripts/run.sh            this machine only: http://127.0.0.1:8501
#   bash scripts/run.sh --class    a class: serves on the machine's network addresses (0.0.0.0) and prints
#                                  the address students open and the teacher code (docs/class.md)
#
# Further arguments go to `streamlit run` (e.g. --server.port 8600). Either way each browser gets its own
# session, the Class page's pooled view stays behind the teacher code, and uploads are capped
# (.streamlit/config.toml: maxUploadSize). DMLCORE_SKIP_SETUP=1 skips scripts/setup.sh (the tests use it).
set -euo pipefail
cd "$(dirname "$0")/.."
CLASS=0
if [ "${1:-}" = "--class" ]; then
  CLASS=1
  shift
fi
[ "${DMLCORE_SKIP_SETUP:-0}" = 1 ] || bash scripts/setup.sh
# The teacher's code opens the Class page's pooled view (docs/class.md); keep the one given, else make one.
export DMLCORE_TEACHER_CODE="${DMLCORE_TEACHER_CODE:-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(3))')}"
PORT=8501
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do     # the port the server will use, to print the address
  case "${args[$i]}" in
    --server.port) PORT="${args[$((i + 1))]:-$PORT}" ;;
    --server.port=*) PORT="${args[$i]#*=}" ;;
  esac
done
if [ "$CLASS" = 1 ]; then
  ADDRESS=0.0.0.0
  # the machine's non-loopback IPv4 addresses, the ones students' computers can reach
  IPS=$(ip -4 -o addr show scope global up 2>/dev/null | awk '{split($4, a, "/"); print a[1]}' || true)
  [ -n "$IPS" ] || IPS=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' || true)
  echo "A class on this server. Students open (any address their network reaches):"
  if [ -n "$IPS" ]; then
    for ip in $IPS; do echo "    http://${ip}:${PORT}"; done
  else
    echo "    http://<this machine's address>:${PORT}   (no network address found: is the machine connected?)"
  fi
else
  ADDRESS=127.0.0.1
  echo "Open http://127.0.0.1:${PORT} (this machine only; 'bash scripts/run.sh --class' serves a class)."
fi
echo "Teacher code for the Class page: ${DMLCORE_TEACHER_CODE}"
exec .venv/bin/python -m streamlit run app.py --server.address "$ADDRESS" --server.port "$PORT" "$@"
