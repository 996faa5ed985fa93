#!/usr/bin/env bash
# Install Debian's libfaketime (and its `faketime` command) when it is missing, for the
# fault scenarios that move one node's clock (LD_PRELOAD=libfaketime.so.1 with FAKETIME
# set in that node's environment only). Without root or apt, nothing is installed.
# This installs system-wide: `make ... LIBFAKETIME=skip` skips it.
set -uo pipefail

installed() {
  compgen -G "/usr/lib/*/faketime/libfaketime.so.1" >/dev/null && command -v faketime >/dev/null
}

if installed || ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
  exit 0
fi
echo "installing Debian's libfaketime and faketime for the fault suite's clock scenarios"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null &&
  apt-get install -y -qq --no-install-recommends libfaketime faketime >/dev/null
exit 0
