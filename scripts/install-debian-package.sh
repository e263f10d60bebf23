#!/usr/bin/env bash
# Installs Debian's packages given (with sudo when not root), for the scripts that need a tool
# only when they run: Chromium for the observer's browser checks, wrk for the load.
#
# Usage: scripts/install-debian-package.sh PACKAGE...
set -euo pipefail
echo "installing $* (Debian's packages)" >&2
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$@" >/dev/null
