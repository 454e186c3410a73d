#!/usr/bin/env bash
# Everything LockLens needs on a fresh Debian machine, idempotent: Debian's etcd server and client (the tests and the
# demo run real etcd; etcdctl is the interop and benchmark peer), openssl (tests make their own certificates), and the
# npm dependencies from the lockfile. Runs as root on these machines; uses sudo where that is not so.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(etcd-server etcd-client openssl)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]} from Debian"
  $sudo apt-get update -qq
  # The etcd-server package would start a system etcd on 2379; LockLens starts its own etcds, so keep it stopped.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm ci only when the lockfile changed since the last install (node_modules/.package-lock.json mirrors it).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The real VS Code (code-server, Node 24, Chromium) for the extension-host and UI tests.
bash scripts/setup-vscode.sh
