#!/usr/bin/env bash
# Installs what Shoal builds and tests with: the Debian 12 packages (as
# root: apt-get installs what is missing; otherwise it prints the line and
# fails), then the S3 server the COS tests run against (s3rver, pinned in
# deploy/s3rver/package.json) into deploy/s3rver/node_modules, which needs
# no root and is skipped when that version is there already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libevent-dev libisal-dev libmicrohttpd-dev libs3-dev liblmdb-dev libglpk-dev
      libjansson-dev libcurl4-openssl-dev libssl-dev curl python3 python3-boto3 python3-matplotlib
      awscli s3cmd rclone nginx wrk redis-server redis-tools rt-tests prometheus)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (its own npm inside): only
# ask Debian for it when there is none.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
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
fi

s3dir="$here/s3rver"
want=$(sed -n 's/.*"s3rver": *"\([^"]*\)".*/\1/p' "$s3dir/package.json")
have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
       "$s3dir/node_modules/s3rver/package.json" 2>/dev/null | head -n 1 || true)
if [ "$have" != "$want" ]; then
    echo "installing s3rver $want into $s3dir/node_modules" >&2
    (cd "$s3dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
