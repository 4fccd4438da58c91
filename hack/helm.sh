#!/usr/bin/env bash
# Builds the pinned helm v3 binary the chart tests use into bin/tools/helm.
#
# The test machines reach no download site but the Go module proxy, so helm
# (usually fetched as a release tarball) is compiled from its Go module with
# `go install pkg@version`. That builds outside this repository's go.mod, so
# our module graph is untouched. The binary is rebuilt only when it is missing
# or was built from another version or with other link flags, so a warm run
# takes a second.
#
# Progress goes to stderr; the only line on stdout is the binary's path, so
#   HELM="$(hack/helm.sh)"
# works as is.
set -euo pipefail

# Pinned version: the newest v3.x the module proxy serves
# (`go list -m -versions helm.sh/helm/v3`).
readonly HELM_VERSION=v3.22.0
readonly HELM_MODULE=helm.sh/helm/v3

readonly GO="${GO:-go}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly out="${HELM_TOOLS_DIR:-${root}/bin/tools}"
readonly binary="${out}/helm"

# go install pkg@version must not see a workspace above the tree.
export GOWORK=off

usage() {
	cat <<EOF
Usage: hack/helm.sh [-h|--help]

Builds helm ${HELM_VERSION} from its Go module into ${binary}
(override the folder with HELM_TOOLS_DIR), skipping the build when the binary
there was built from ${HELM_VERSION}, then prints the binary's path.

Environment:
  GO              go command to use (default: go)
  HELM_TOOLS_DIR  output folder (default: <repo>/bin/tools)
EOF
}

log() { printf 'helm: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}


# built_ldflags prints the -ldflags binary was built with, from the stamp
# file written beside it after the build: with -trimpath, Go leaves the
# link flags out of the binary's build information.
built_ldflags() {
	cat "$1.ldflags" 2>/dev/null || true
}

# ldflags prints the link flags helm's own Makefile uses: the version, and
# the Kubernetes version that `helm template` and `helm lint` assume (that
# of the client-go module helm is built with: client-go v0.37.x gives
# 1.37), without which they assume 1.20 and refuse charts that require a
# newer one.
ldflags() {
	local info gomod clientgo minor
	info="$("${GO}" mod download -json "${HELM_MODULE}@${HELM_VERSION}")" ||
		die "go mod download ${HELM_MODULE}@${HELM_VERSION} failed"
	gomod="$(sed -nE 's#^[[:space:]]*"GoMod": "(.*)",?$#\1#p' <<<"${info}")"
	[[ -f "${gomod}" ]] || die "no go.mod for ${HELM_MODULE}@${HELM_VERSION} in the module cache"
	clientgo="$(awk '$1 == "k8s.io/client-go" { print $2 }' "${gomod}")"
	[[ "${clientgo}" =~ ^v0\.([0-9]+)\. ]] ||
		die "cannot read the k8s.io/client-go version from ${gomod} (got '${clientgo}')"
	minor="${BASH_REMATCH[1]}"
	local flags="-s -w -X ${HELM_MODULE}/internal/version.version=${HELM_VERSION}"
	local pkg
	for pkg in pkg/lint/rules pkg/chartutil; do
		flags+=" -X ${HELM_MODULE}/${pkg}.k8sVersionMajor=1 -X ${HELM_MODULE}/${pkg}.k8sVersionMinor=${minor}"
	done
	printf '%s\n' "${flags}"
}

# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

main() {
	expect_no_args "$@"

	command -v "${GO}" >/dev/null || die "'${GO}' not found; install Go or set GO"
	mkdir -p "${out}"

	lock_builds "${out}/.helm.lock"

	local flags
	flags="$(ldflags)"
	if [[ -x "${binary}" && "$(module_version "${binary}" "${HELM_MODULE}")" == "${HELM_VERSION}" &&
		"$(built_ldflags "${binary}")" == "${flags}" ]]; then
		log "up to date (${HELM_VERSION}), skipping build"
	else
		local -i started=${SECONDS}
		log "building helm ${HELM_VERSION} (a few minutes on 2 busy cores from cold)"
		GOBIN="${out}" "${GO}" install -trimpath -ldflags "${flags}" \
			"${HELM_MODULE}/cmd/helm@${HELM_VERSION}" ||
			die "go install ${HELM_MODULE}/cmd/helm@${HELM_VERSION} failed"
		[[ "$(module_version "${binary}" "${HELM_MODULE}")" == "${HELM_VERSION}" ]] ||
			die "${binary} was not built from ${HELM_MODULE} ${HELM_VERSION}"
		printf '%s\n' "${flags}" >"${binary}.ldflags"
		log "built helm in $((SECONDS - started)) s"
	fi
	"${binary}" version --short >&2 || die "${binary} does not start"
	printf '%s\n' "${binary}"
}

main "$@"
