# Sourced by the setup scripts: `ensure_apt_packages WHO PACKAGE...` installs from Debian the packages not yet
# installed, and nothing when all are. Runs as root on these machines; uses sudo where that is not so.
# RUNLEVEL=1 keeps package scripts from starting services (etcd-server would start a system etcd on 2379).
ensure_apt_packages() {
  local who=$1; shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "$who: installing ${missing[*]} from Debian"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
