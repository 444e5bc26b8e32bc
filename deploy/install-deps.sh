#!/usr/bin/env bash
# Installs the Debian 12 packages Shoal builds and tests with.
# As root: apt-get installs what is missing. Otherwise: prints the line and fails.
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libevent-dev libisal-dev libmicrohttpd-dev libs3-dev liblmdb-dev libglpk-dev
      libjansson-dev libcurl4-openssl-dev libssl-dev curl python3
      nginx wrk redis-server redis-tools rt-tests prometheus)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages; run as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# nginx, redis-server and prometheus are test tools: the tests start their own on
# loopback, so keep the packages from starting system-wide daemons.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
