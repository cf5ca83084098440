#!/usr/bin/env bash
# The shipped Dockerfile, built and run with Podman (CI: .ci/run). Builds the base image
# (build-base.sh, cached), builds the project image from the repository (podman honours
# .dockerignore: the filtered context), runs the simulator and infermeter from it, and checks
# what a Kubernetes user relies on first: /readyz 200, a streamed request metered, not root,
# SIGTERM drains a stream in flight and exits 0 within the grace period, the HEALTHCHECK passes
# and fails once the daemon is gone. Prints the build time and the image size.
#
# Rootful podman, runc and the host network: see NOTES.md "Containers". Needs root, podman,
# runc, debootstrap, curl. Every container it starts is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
here="$PWD/scripts/image"
export CONTAINERS_CONF="$here/containers.conf"
# A fixed tag: the next run's build reuses its layers (npm ci runs again only when the lockfile changes).
tag="localhost/infermeter:ci"
# podman without systemd logs an error for every healthcheck timer it cannot make: kept here, shown on failure.
plog="$(mktemp /tmp/infermeter-ci-podman-XXXXXX.log)"
sim="infermeter-ci-sim-$$"
daemon="infermeter-ci-$$"
grace=10
fail() { echo "image test FAILED: $*" >&2; podman logs --tail 30 "$daemon" >&2 2>/dev/null || true; tail -20 "$plog" >&2; exit 1; }
cleanup() {
  # One at a time: podman 4.3 removes none of the names when one of them does not exist.
  for c in "$sim" "$daemon" "$daemon-hc"; do podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  rm -f "$plog"
}
trap cleanup EXIT
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
now() { date +%s.%N; }
secs() { awk "BEGIN{printf \"%.1f\", $2-$1}"; }

t0=$(now)
base="$(bash "$here/build-base.sh")"
t1=$(now)
echo "== base image $base ($(secs "$t0" "$t1") s)"

podman build --quiet --layers --format docker --network host --build-arg "NODE_IMAGE=$base" -t "$tag" . >/dev/null
t2=$(now)
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "== image $tag built in $(secs "$t1" "$t2") s; size $(awk "BEGIN{printf \"%.0f\", $size/1048576}") MiB ($size bytes)"

# The filtered context: the runtime image holds the compiled sources and production dependencies only.
app="$(podman run --rm --runtime runc --network host --entrypoint ls "$tag" /app | tr '\n' ' ')"
[ "$app" = "bin dist node_modules package-lock.json package.json " ] || fail "/app holds: $app"
podman run --rm --runtime runc --network host --entrypoint sh "$tag" -c 'test ! -e /app/node_modules/typescript && test ! -e /app/dist/test && test -f /app/dist/src/cli.js' \
  || fail "the image holds dev dependencies or tests"

sim_port=$(free_port); proxy_port=$(free_port); metrics_port=$(free_port)
podman run -d --name "$sim" --runtime runc --network host "$tag" simulate --listen "127.0.0.1:$sim_port" >/dev/null 2>>"$plog"
podman run -d --name "$daemon" --runtime runc --network host \
  -e "INFERMETER_LISTEN=127.0.0.1:$proxy_port" -e "INFERMETER_METRICS_LISTEN=127.0.0.1:$metrics_port" \
  "$tag" --upstream "http://127.0.0.1:$sim_port" --shutdown-timeout "${grace}s" --no-collector.gpu --tenant-from api-key >/dev/null 2>>"$plog"
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$metrics_port/readyz")" = 200 ] && break
  sleep 0.2
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$metrics_port/readyz")" = 200 ] || fail "/readyz is not 200"
echo "== /readyz 200"

uid="$(podman exec "$daemon" id -u)"
[ "$uid" = 1000 ] || fail "the daemon runs as uid $uid"
user="$(podman top "$daemon" user | tail -n +2 | sort -u | tr -d ' \n')"
[ "$user" = node ] || fail "the daemon's processes run as $user"
echo "== runs as node (uid 1000)"

# --tenant-from api-key without --tenant-salt: the salt is made in the image's state dir, and shown nowhere.
salt="$(podman exec "$daemon" cat /var/lib/infermeter/tenant-salt)" || fail "no tenant salt in /var/lib/infermeter"
[[ "$salt" =~ ^[0-9a-f]{64}$ ]] || fail "the kept tenant salt is not 64 hex characters"
if podman logs "$daemon" 2>&1 | grep -qF "$salt"; then fail "the tenant salt is in the logs"; fi
echo "== tenant salt kept in /var/lib/infermeter, not in the logs"

chat() { curl -sN "http://127.0.0.1:$proxy_port/v1/chat/completions" -H 'content-type: application/json' \
  -d "{\"model\":\"meta-llama/Llama-2-7b-chat-hf\",\"stream\":true,\"max_tokens\":$1,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"; }
out="$(chat 8)"
grep -q '^data: \[DONE\]' <<<"$out" || fail "the stream did not end with [DONE]: ${out:0:300}"
metered=""
for _ in $(seq 50); do
  metered="$(curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -E '^gen_ai_server_time_to_first_token_seconds_count\{' | grep 'Llama-2-7b-chat-hf' | awk '{print $2}' | head -1)"
  [ "${metered:-0}" = 1 ] && break
  sleep 0.2
done
[ "${metered:-0}" = 1 ] || fail "the streamed request is not in /metrics (TTFT count ${metered:-none})"
if curl -s "http://127.0.0.1:$metrics_port/metrics" | grep -qF "$salt"; then fail "the tenant salt is in /metrics"; fi
echo "== a streamed request is metered (TTFT count 1)"

podman healthcheck run "$daemon" >/dev/null 2>>"$plog" || fail "HEALTHCHECK fails while the daemon runs"
echo "== HEALTHCHECK passes"

# SIGTERM with a stream in flight: the stream finishes, the container exits 0 within the grace period.
chat 60 >"/tmp/infermeter-ci-drain-$$" &
reader=$!
sleep 1
ts=$(now)
podman kill --signal TERM "$daemon" >/dev/null 2>>"$plog"
code="$(timeout $((grace + 5)) podman wait "$daemon")" || fail "the daemon did not exit within ${grace}s of SIGTERM"
te=$(now)
wait "$reader" || true
[ "$code" = 0 ] || fail "the daemon exited with $code after SIGTERM"
grep -q '^data: \[DONE\]' "/tmp/infermeter-ci-drain-$$" || fail "the stream in flight at SIGTERM was cut: $(tail -c 300 "/tmp/infermeter-ci-drain-$$")"
rm -f "/tmp/infermeter-ci-drain-$$"
echo "== SIGTERM: the stream in flight finished, exit 0 after $(secs "$ts" "$te") s (grace ${grace}s)"

# The image's own HEALTHCHECK command, now that no daemon listens on the port.
hc="$(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$tag")"
[[ "$hc" == '["CMD","node","-e",'* ]] || fail "unexpected HEALTHCHECK: $hc"
script="$(node -e 'console.log(JSON.parse(process.argv[1])[3])' "$hc")"
if podman run --rm --name "$daemon-hc" --runtime runc --network host -e "INFERMETER_METRICS_LISTEN=127.0.0.1:$metrics_port" --entrypoint node "$tag" -e "$script" 2>>"$plog"; then
  fail "HEALTHCHECK passes with the daemon stopped"
fi
echo "== HEALTHCHECK fails once the daemon is stopped"
echo "== image test passed in $(secs "$t0" "$(now)") s (base $(secs "$t0" "$t1") s, build $(secs "$t1" "$t2") s, size $(awk "BEGIN{printf \"%.0f\", $size/1048576}") MiB)"
