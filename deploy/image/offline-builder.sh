#!/bin/sh
# offline-builder.sh IMAGE: makes a local stand-in for the Dockerfile's build
# stage (GO_IMAGE) on a machine that reaches no image registry, as CI's does:
# this machine's Go toolchain (go env GOROOT), /bin/sh with the libraries it
# loads, the CA certificates and the time zone database, imported with
# `podman import` (or `docker import`). The Dockerfile's build stage needs
# nothing else: go mod download reaches the module proxy like the host does.
# Usage: deploy/image/offline-builder.sh localhost/hookjet-go:1.26.8 [podman|docker]
set -eu
image=$1
tool=${2:-podman}
goroot=$(go env GOROOT)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/root/bin" "$stage/root/tmp" "$stage/root/etc/ssl/certs" "$stage/root/usr/share" "$stage/root/usr/local" "$stage/root/go" "$stage/root/root"
chmod 1777 "$stage/root/tmp"
cp -L /bin/sh "$stage/root/bin/sh"
# The shell's shared libraries and loader, at the paths it asks for.
for lib in $(ldd /bin/sh | grep -o '/[^ ]*'); do
  mkdir -p "$stage/root$(dirname "$lib")"
  cp -L "$lib" "$stage/root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$stage/root/etc/ssl/certs/"
cp -a /usr/share/zoneinfo "$stage/root/usr/share/"
tar -C "$stage/root" -cf "$stage/base.tar" .
# The toolchain, without its own tests and docs.
tar -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/doc" \
  --transform "s,^$(basename "$goroot"),usr/local/go," -rf "$stage/base.tar" "$(basename "$goroot")"
"$tool" import \
  --change 'ENV PATH=/usr/local/go/bin:/go/bin:/bin' \
  --change 'ENV GOPATH=/go' \
  --change 'ENV HOME=/root' \
  "$stage/base.tar" "$image" >/dev/null
echo "$image: $(go version) stand-in for the golang image"
