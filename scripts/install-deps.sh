#!/usr/bin/env bash
# Installs what Troupe needs from Debian when it is missing: liburcu-dev (the mailboxes'
# wait-free queues) and pkg-config (how SwiftPM finds it). Needs root or sudo.
set -euo pipefail
need=()
dpkg -s liburcu-dev >/dev/null 2>&1 || need+=(liburcu-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    echo "installing ${need[*]}" >&2
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi
