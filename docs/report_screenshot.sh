#!/usr/bin/env bash
# Makes docs/report.png, the report screenshot in the README and docs: the embedded SmolLM2 judge
# on the built-in sample (one instance per category, three strategies), rendered by
# `fbi report` and photographed by headless Chromium (Debian's chromium package).
#   bash docs/report_screenshot.sh [WORK_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-$(mktemp -d)}"
fbi evaluate --strategy vanilla_star --strategy pairwise_star --strategy reference \
    --limit 1 --output "$work/run"
fbi report "$work/run" --format html --output "$work/report"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --window-size=1280,2600 \
    --screenshot="$here/report.png" "file://$work/report/report.html"
echo "wrote $here/report.png from $work/report/report.html"
