#!/usr/bin/env bash
# Everything LockLens needs on a fresh Debian machine, idempotent: Debian's etcd server and client (the tests and the
# demo run real etcd; etcdctl is the interop and benchmark peer), redis-server and redis-tools (real Redis servers and
# clusters for the tests and the demo), python3-redis (redis-py, the Redis peer that holds and waits, for
# /usr/bin/python3), zookeeper (the tests run real ZooKeeper servers and ensembles from its jar; it pulls in a Java
# runtime, default-jre-headless among it, and its service is never started: RUNLEVEL=1, see apt.sh), python3-kazoo
# (kazoo's Lock, the ZooKeeper peer that holds and waits, for /usr/bin/python3), postgresql and mariadb-server (the
# tests start their own servers from these binaries on free ports with temporary data dirs; the system services are
# never started), python3-psycopg2 and python3-pymysql (the SQL peers that hold and wait), openssl (tests make their own
# certificates), prometheus and prometheus-alertmanager (promtool checks and unit-tests the shipped alert rules; the
# end-to-end alert test runs a real Prometheus and Alertmanager on free ports; their services are never started), and
# the npm dependencies from the lockfile. Runs as root on these machines; uses sudo where that is not so.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/apt.sh
ensure_apt_packages setup etcd-server etcd-client openssl redis-server redis-tools python3-redis zookeeper python3-kazoo \
  postgresql mariadb-server python3-psycopg2 python3-pymysql prometheus prometheus-alertmanager golang-go golang-etcd-server-dev python3-etcd3

# npm ci only when the lockfile changed since the last install (node_modules/.package-lock.json mirrors it).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The real VS Code (code-server, Node 24, Chromium) for the extension-host and UI tests.
bash scripts/setup-vscode.sh
