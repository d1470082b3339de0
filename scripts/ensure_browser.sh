#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests when it is missing and we are root.
# Never `playwright install`: it downloads a browser build, which this network refuses.
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "make: installing Debian's chromium for the browser tests (about 1-2 minutes)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/stepwise-apt.log 2>&1 \
    || echo "make: WARNING: apt-get could not install chromium (see /tmp/stepwise-apt.log); browser tests will be skipped"
else
  echo "make: WARNING: /usr/bin/chromium is missing and apt-get cannot run here; browser tests will be skipped"
fi
exit 0
