#!/usr/bin/env bash
# Install Debian's Chromium for the dashboard's browser tests when it is missing
# (Playwright drives it through executable_path: browser downloads are not possible
# here). Without root or apt, nothing is installed and those tests skip loudly (or
# fail, with TICKWHEEL_REQUIRE_SERVICES=1). This installs system-wide: `make test
# BROWSER=skip` skips it.
set -uo pipefail

if [ -x /usr/bin/chromium ] || ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
  exit 0
fi
echo "installing Debian's chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null
exit 0
