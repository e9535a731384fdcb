#!/usr/bin/env bash
# Regenerate docs/console/*.png: the console's browser test (real server, Debian's Chromium via
# playwright-core) saves a screenshot of the inbox, the timeline and the browser verification
# as it goes. Needs /usr/bin/chromium (apt-get install -y chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
env -u DATABASE_URL VOUCH_CONSOLE_SCREENSHOTS="$PWD/docs/console" npx vitest run test/console-browser.test.ts
