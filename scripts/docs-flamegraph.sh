#!/usr/bin/env bash
# Draws docs/images/flamegraph.png, the flame graph in docs/profile.md:
# xref profiles python3 (the first in PATH: on these machines pyenv's
# build, which keeps its symbols; Debian's /usr/bin/python3 is stripped)
# running json, re, zlib and hashlib work, writes the SVG, and headless
# Chromium takes the screenshot (as the tests do). Run as root from the repository root after scripts/build.sh:
#   bash scripts/docs-flamegraph.sh [XREF]
set -euo pipefail
cd "$(dirname "$0")/.."
xref=$(realpath "${1:-build/helper/xref}")
out=$PWD/docs/images/flamegraph.png
scratch=$(mktemp -d)
trap 'kill "$python_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT

python3 - >"$scratch/python.out" <<'PY' &
import hashlib, json, os, re, zlib
print("ready", flush=True)
document = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", "c"], "price": i * 1.5} for i in range(400)]}
pattern = re.compile(r"item-(\d+)")
while True:
    text = json.dumps(document)
    json.loads(text)
    sum(int(m.group(1)) for m in pattern.finditer(text))
    zlib.compress(text.encode(), 6)
    hashlib.sha256(text.encode()).hexdigest()
PY
python_pid=$!
until grep -q ready "$scratch/python.out" 2>/dev/null; do sleep 0.1; done

# In the scratch directory: the picture's title is the capture's name as given.
cd "$scratch"
"$xref" profile --pid "$python_pid" --duration 5s --freq 499 --callers dwarf --out python.xprof
"$xref" profile report python.xprof --format svg -o flame.svg
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$scratch/chromium" \
  --screenshot="$scratch/flame.png" --window-size=1200,600 \
  "file://$scratch/flame.svg#search=scan_once%7Cencoder_call" 2>/dev/null
cp "$scratch/flame.png" "$out"
echo "docs-flamegraph: wrote docs/images/flamegraph.png"
