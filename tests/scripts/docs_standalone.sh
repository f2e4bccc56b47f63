#!/bin/sh
# The project's docs stand on their own (issue 25): README.md, docs/*.md and
# the example config never send a reader to ../shared/, which only the
# development machines have. Env: REBOUND_TOP (the checkout). Exit 0 = pass.
set -u
top=${REBOUND_TOP:-$(pwd)}
cd "$top" || exit 1
hits=$(grep -n -F '../shared' README.md docs/*.md rebound.toml examples/*.toml 2>/dev/null)
if [ -n "$hits" ]; then
  echo "docs_standalone: the docs point at ../shared/ (readers of the repository lack it):"
  echo "$hits" | sed 's/^/  /'
  exit 1
fi
echo "docs_standalone: no doc points at ../shared/"
