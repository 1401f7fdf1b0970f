#!/bin/sh
# Install what lispmcp needs to build, run and test on Debian 12, if it is
# missing. Safe to run again: it does nothing when everything is there.
# Arguments name further packages (make bench adds gnuplot-nox).
set -eu

packages="gcc make pkg-config sbcl libjansson-dev libuv1-dev libmicrohttpd-dev check valgrind $*"
command -v node >/dev/null 2>&1 || packages="$packages nodejs"
command -v npm >/dev/null 2>&1 || packages="$packages npm"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "Installing:$missing" >&2
$sudo apt-get update -qq
# $missing is a list of package names: split it.
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
