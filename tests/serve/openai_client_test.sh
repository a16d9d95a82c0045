#!/usr/bin/env bash
# Conformance with the official openai npm client (pinned in openai-client/package-lock.json).
# Usage: openai_client_test.sh FLEETPLAN WORKDIR. Installs the client with `npm ci` into
# WORKDIR (a build folder), serves the test scenario on an ephemeral loopback port and runs
# conformance.mjs against it. Exit 77 (skipped) when node or npm is missing.
set -euo pipefail
fleetplan=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are needed for the openai client conformance test (apt-get install nodejs npm)"
  exit 77
fi
mkdir -p "$work"
cp "$here/openai-client/package.json" "$here/openai-client/package-lock.json" "$here/openai-client/conformance.mjs" "$work/"
if [ ! -d "$work/node_modules/openai" ] || ! cmp -s "$here/openai-client/package-lock.json" "$work/.installed-lock"; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/openai-client/package-lock.json" "$work/.installed-lock"
fi
rm -f "$work/ports"
"$fleetplan" serve "$here/serve-test.yaml" --port 0 --speed 50 --exit-after 60s --ports-file "$work/ports" 2>"$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/ports" ] && break; sleep 0.1; done
port=$(head -1 "$work/ports")
node "$work/conformance.mjs" "$port" llama-3.1-8b
