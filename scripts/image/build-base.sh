#!/usr/bin/env bash
# Makes the base image the Dockerfile builds FROM (--build-arg NODE_IMAGE=...), without a registry:
# a Debian bookworm minbase from debootstrap (this machine's configured Debian mirror), this
# machine's node and npm, a `node` user with uid 1000 (as in the official node image) and this
# machine's CA bundle with NODE_EXTRA_CA_CERTS pointing at it (npm ci inside the build must
# trust what the host trusts). The root filesystem is cached as a tarball in
# ~/.cache/infermeter/image, keyed by the node version and this script, so a second run only
# imports it (or does nothing when podman already has it).
#
# Prints the image name on stdout; progress goes to stderr. Needs root (debootstrap, rootful podman).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
cache="${INFERMETER_IMAGE_CACHE:-$HOME/.cache/infermeter/image}"
node_bin="$(readlink -f "$(command -v node)")"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
key="$(node --version)-$( (cat "$0" "$here/containers.conf"; cat "$npm_dir/package.json") | sha256sum | cut -c1-12)"
image="localhost/infermeter-base:$key"
say() { echo "build-base: $*" >&2; }

if podman image exists "$image"; then
  say "podman has $image"
  echo "$image"
  exit 0
fi
mkdir -p "$cache"
tarball="$cache/bookworm-minbase-$key.tar"
if [ ! -s "$tarball" ]; then
  # The first URI of the configured Debian mirror (deb822 sources or a sources.list line).
  mirror="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)"
  [ -n "$mirror" ] || mirror="$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -v security | head -1)"
  [ -n "$mirror" ] || { say "no Debian mirror found in /etc/apt/sources.list*"; exit 1; }
  root="$(mktemp -d "$cache/root.XXXXXX")"
  trap 'rm -rf "$root"' EXIT
  say "debootstrap bookworm minbase from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
  install -m 0755 "$node_bin" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  chroot "$root" groupadd --gid 1000 node
  chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/host-ca-bundle.crt"
  # What a container does not need: apt lists and caches, docs, man pages.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*
  tar -C "$root" --numeric-owner -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
  rm -rf "$root"
  trap - EXIT
fi
say "podman import $tarball"
podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca-bundle.crt' \
  --change 'CMD ["node"]' \
  "$tarball" "$image" >/dev/null
echo "$image"
