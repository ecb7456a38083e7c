#!/bin/sh
# Renders an HTML file in headless chromium and writes the DOM after the
# page's scripts ran: render.sh PAGE.html OUT.html. Chromium's own log
# (console messages included) goes to stderr. Used by tests/test_html.c.
set -eu
page=$1
out=$2
browser=$(command -v chromium || command -v chromium-browser)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --virtual-time-budget=2000 --dump-dom "file://$(realpath "$page")" >"$out"
