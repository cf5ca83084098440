#!/usr/bin/env bash
# Builds (or reuses) a CPU-only llama.cpp `llama-server` from the source bundled in the
# node-llama-cpp npm tarball, extracts the vocab-only GGUF files that come with it, and writes
# a tiny random-weight llama model for the real-engine tests and benchmark.
#
# Everything lands in a cache directory outside the repository, keyed by the llama.cpp commit:
#   ${INFERMETER_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infermeter/llama-server}/<commit>/
#     bin/llama-server   vocab/ggml-vocab-*.gguf   models/*.gguf   build-info.json
# and a manifest `current.json` in the cache root names the server and model for tests.
# A warm cache costs nothing: the script prints the paths and exits.
#
# Prints `INFERMETER_LLAMA_SERVER=...` and `INFERMETER_LLAMA_MODEL=...` lines (shell-quoted) on
# stdout and nothing else, for `set -a; eval "$(npm run -s engine:llama)"; set +a`; progress
# and errors go to stderr. Exits non-zero, saying why, when anything fails.
set -euo pipefail

NODE_LLAMA_CPP_VERSION="${INFERMETER_NODE_LLAMA_CPP_VERSION:-3.21.1}"
CACHE_ROOT="${INFERMETER_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infermeter/llama-server}"
JOBS="${INFERMETER_LLAMA_JOBS:-$(nproc)}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Flags are part of the build's identity: a cached binary built with other flags is rebuilt.
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DBUILD_SHARED_LIBS=OFF          # one self-contained binary we can copy out of the build tree
  -DGGML_NATIVE=OFF                # portable x86-64-v3 (AVX2/FMA/F16C) instead of -march=native
  -DGGML_CCACHE=OFF
  -DLLAMA_OPENSSL=OFF              # loopback only: no HTTPS, no model downloads (LLAMA_CURL is gone in this version)
  -DLLAMA_USE_PREBUILT_UI=OFF      # the default fetches the web UI from Hugging Face at build time
  -DLLAMA_BUILD_UI=OFF
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_APP=OFF
  -DLLAMA_BUILD_SERVER=ON
)

log() { printf '[engine:llama] %s\n' "$*" >&2; }
die() { printf '[engine:llama] ERROR: %s\n' "$*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH; install it (Debian: apt-get install -y $2)"; }

flags_id() { printf '%s\n' "${CMAKE_FLAGS[@]}" | sha256sum | cut -c1-16; }

# The model is cheap (about a second), but the warm path should cost nothing: the manifest
# records a hash of the generator's sources, and the model is rewritten only when they changed.
generator_hash() {
  cat "$REPO_ROOT"/src/lib/gguf*.ts "$REPO_ROOT/scripts/llama/write-model.ts" | sha256sum | cut -c1-16
}

write_model() {
  local dir="$1"
  log "compiling the GGUF model writer"
  (cd "$REPO_ROOT" && npx --no-install tsc -p scripts/llama/tsconfig.json >&2) \
    || die "TypeScript build of scripts/llama failed"
  node "$REPO_ROOT/dist/scripts/llama/write-model.js" --vocab-dir "$dir/vocab" --out-dir "$dir/models"
}

manifest_field() {
  node -e 'try { const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(String(m[process.argv[2]] ?? "")); } catch {}' \
    "$CACHE_ROOT/current.json" "$1"
}

print_result() {
  local dir="$1" model="" hash
  hash="$(generator_hash)"
  if [[ "$(manifest_field commit)" == "$(basename "$dir")" && "$(manifest_field generator)" == "$hash" ]]; then
    model="$(manifest_field model)"
    [[ -f "$model" ]] || model=""
  fi
  if [[ -z "$model" ]]; then
    model="$(write_model "$dir")" || die "writing the tiny model failed"
    [[ -f "$model" ]] || die "model writer did not produce a file (got '$model')"
  fi
  cat > "$CACHE_ROOT/current.json.tmp" <<JSON
{"nodeLlamaCpp":"$NODE_LLAMA_CPP_VERSION","commit":"$(basename "$dir")","server":"$dir/bin/llama-server","model":"$model","vocabDir":"$dir/vocab","generator":"$hash"}
JSON
  mv "$CACHE_ROOT/current.json.tmp" "$CACHE_ROOT/current.json"
  log "server: $dir/bin/llama-server ($(cat "$dir/build-info.json"))"
  log "model:  $model ($(du -h "$model" | cut -f1))"
  printf 'INFERMETER_LLAMA_SERVER=%q\n' "$dir/bin/llama-server"
  printf 'INFERMETER_LLAMA_MODEL=%q\n' "$model"
}

is_built() {
  local dir="$1"
  [[ -x "$dir/bin/llama-server" && -f "$dir/build-info.json" ]] \
    && grep -q "\"flags\":\"$(flags_id)\"" "$dir/build-info.json" \
    && compgen -G "$dir/vocab/ggml-vocab-*.gguf" >/dev/null
}

# The whole run is one function, parsed before it starts: bash reads a script as it goes, so
# editing this file during a 10-minute build would otherwise change what the rest of it runs.
main() {
  mkdir -p "$CACHE_ROOT"
  # Several test runs or engineers may start this at once: one builds, the others wait and reuse.
  exec 9>"$CACHE_ROOT/.lock"
  flock 9

  pointer="$CACHE_ROOT/node-llama-cpp@$NODE_LLAMA_CPP_VERSION.commit"
  if [[ -f "$pointer" ]]; then
    dir="$CACHE_ROOT/$(cat "$pointer")"
    if is_built "$dir"; then
      log "reusing cached llama-server ($(cat "$pointer"))"
      print_result "$dir"
      exit 0
    fi
  fi

  need npm npm
  need git git
  need cmake cmake
  need g++ g++
  need tar tar

  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  log "fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (npm pack)"
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null) \
    || die "npm pack node-llama-cpp@$NODE_LLAMA_CPP_VERSION failed (registry unreachable?)"
  tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json \
    || die "the tarball has no llama/gitRelease.bundle"
  commit="$(git bundle list-heads "$tmp/package/llama/gitRelease.bundle" | awk '$2=="HEAD"{print $1}')"
  [[ -n "$commit" ]] || die "cannot read HEAD from llama/gitRelease.bundle"
  dir="$CACHE_ROOT/$commit"
  log "llama.cpp commit $commit ($(tr -d '\n ' < "$tmp/package/llama/llama.cpp.info.json"))"

  if ! is_built "$dir"; then
    mkdir -p "$dir"
    if [[ ! -d "$dir/src/.git" ]]; then
      rm -rf "$dir/src"
      git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$dir/src" 2>/dev/null \
        || die "git clone of the bundle failed"
    fi
    mkdir -p "$dir/vocab"
    cp "$dir"/src/models/ggml-vocab-*.gguf "$dir/vocab/" || die "no models/ggml-vocab-*.gguf in the llama.cpp source"
    generator=()
    command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    [[ -f "$dir/build/CMakeCache.txt" ]] && generator=()   # keep whatever generator configured it
    log "configuring (cmake ${CMAKE_FLAGS[*]})"
    started=$(date +%s)
    cmake -S "$dir/src" -B "$dir/build" "${generator[@]}" "${CMAKE_FLAGS[@]}" > "$dir/configure.log" 2>&1 \
      || { tail -n 40 "$dir/configure.log" >&2; die "cmake configure failed; full log: $dir/configure.log"; }
    log "building llama-server with $JOBS jobs (about 10 minutes on 2 cores); log: $dir/build.log"
    cmake --build "$dir/build" --target llama-server -j "$JOBS" > "$dir/build.log" 2>&1 \
      || { tail -n 40 "$dir/build.log" >&2; die "llama-server build failed; full log: $dir/build.log"; }
    seconds=$(( $(date +%s) - started ))
    mkdir -p "$dir/bin"
    cp "$dir/build/bin/llama-server" "$dir/bin/llama-server.tmp" && mv "$dir/bin/llama-server.tmp" "$dir/bin/llama-server"
    "$dir/bin/llama-server" --version >/dev/null 2>&1 || die "the built llama-server does not run ($dir/bin/llama-server --version)"
    printf '{"commit":"%s","flags":"%s","buildSeconds":%d,"jobs":%d,"builtAt":"%s"}\n' \
      "$commit" "$(flags_id)" "$seconds" "$JOBS" "$(date -u +%FT%TZ)" > "$dir/build-info.json"
    log "built in ${seconds}s"
  fi
  echo "$commit" > "$pointer"
  print_result "$dir"
}

main "$@"
exit
