#!/usr/bin/env bash
# Builds the release archives of the kubectl plugin and its krew manifest.
#
# For each platform krew installs from (linux and darwin, amd64 and arm64),
# a static kubectl-outrigger binary is built and packed alone in
# bin/dist/kubectl-outrigger_<os>_<arch>.tar.gz; hack/krew/outrigger.yaml is
# then rendered into bin/dist/outrigger.yaml with VERSION and each archive's
# sha256. A release publishes the archives as assets of the tag VERSION,
# where the manifest's uri fields point, and submits the manifest to a krew
# index.
set -euo pipefail

usage() {
	echo "usage: VERSION=vX.Y.Z $0"
	echo "builds bin/dist/kubectl-outrigger_<os>_<arch>.tar.gz and bin/dist/outrigger.yaml"
}
log() { echo "plugin-dist: $*" >&2; }

cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh
expect_no_args "$@"

readonly GO="${GO:-go}"
readonly VERSION="${VERSION:-}"
if [[ ! "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	log "VERSION must be a semantic version with a v prefix (krew requires it), such as VERSION=v0.1.0; got '${VERSION}'"
	exit 2
fi
readonly PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
readonly DIST=bin/dist

mkdir -p "$DIST"
manifest="$(cat hack/krew/outrigger.yaml)"
manifest="${manifest//\$\{VERSION\}/$VERSION}"
for platform in "${PLATFORMS[@]}"; do
	os="${platform%/*}" arch="${platform#*/}"
	work="$(mktemp -d)"
	log "building $os/$arch"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" "$GO" build -trimpath -buildvcs=auto \
		-ldflags="-s -X github.com/outrigger-dev/outrigger/pkg/kubectl.releaseVersion=$VERSION" \
		-o "$work/kubectl-outrigger" ./cmd/kubectl-outrigger
	archive="$DIST/kubectl-outrigger_${os}_${arch}.tar.gz"
	tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$archive" kubectl-outrigger
	rm -rf "$work"
	sum="$(sha256sum "$archive" | cut -d' ' -f1)"
	manifest="${manifest//\$\{SHA256_${os}_${arch}\}/$sum}"
	log "$archive $sum"
done
if [[ "$manifest" == *'${'* ]]; then
	log "hack/krew/outrigger.yaml has a placeholder this script does not fill"
	exit 1
fi
printf '%s\n' "$manifest" >"$DIST/outrigger.yaml"
log "wrote $DIST/outrigger.yaml"
