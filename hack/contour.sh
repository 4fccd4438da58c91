#!/usr/bin/env bash
# Builds the pinned Contour binary (Project Contour, an Envoy control plane)
# that the cluster tier's control-plane spec runs, into bin/tools/contour,
# with the release's CRDs beside it (bin/tools/contour-crds.yaml).
#
# The test machines reach no download site but the Go module proxy, so
# contour (usually run from its container image) is compiled from its Go
# module with `go install pkg@version`. That builds outside this
# repository's go.mod, so our module graph is untouched. The binary is
# rebuilt only when it is missing or was built from another version, so a
# warm run takes a second; from cold it takes about 3 minutes on 2 busy
# cores.
#
# Progress goes to stderr; the only line on stdout is the binary's path, so
#   CONTOUR_BIN="$(hack/contour.sh)"
# works as is.
set -euo pipefail

# Pinned version: the newest v1.33.x the module proxy serves
# (`go list -m -versions github.com/projectcontour/contour`).
readonly CONTOUR_VERSION=v1.33.8
readonly CONTOUR_MODULE=github.com/projectcontour/contour

readonly GO="${GO:-go}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly out="${CONTOUR_TOOLS_DIR:-${root}/bin/tools}"
readonly binary="${out}/contour"
readonly crds="${out}/contour-crds.yaml"

# go install pkg@version must not see a workspace above the tree.
export GOWORK=off

usage() {
	cat <<EOF
Usage: hack/contour.sh [-h|--help]

Builds contour ${CONTOUR_VERSION} from its Go module into ${binary}
(override the folder with CONTOUR_TOOLS_DIR), skipping the build when the
binary there was built from ${CONTOUR_VERSION}, writes the release's CRDs
beside it (contour-crds.yaml), then prints the binary's path.

Environment:
  GO                 go command to use (default: go)
  CONTOUR_TOOLS_DIR  output folder (default: <repo>/bin/tools)
EOF
}

log() { printf 'contour: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}


# copy_crds puts the CRDs of the same release (HTTPProxy and the others
# contour watches) beside the binary, as contour-crds.yaml, from the
# module's examples/contour/01-crds.yaml: the tests install them.
copy_crds() {
	local info dir
	info="$("${GO}" mod download -json "${CONTOUR_MODULE}@${CONTOUR_VERSION}")" ||
		die "go mod download ${CONTOUR_MODULE}@${CONTOUR_VERSION} failed"
	dir="$(sed -nE 's#^[[:space:]]*"Dir": "(.*)",?$#\1#p' <<<"${info}")"
	[[ -f "${dir}/examples/contour/01-crds.yaml" ]] ||
		die "no examples/contour/01-crds.yaml in ${dir}"
	install -m 0644 "${dir}/examples/contour/01-crds.yaml" "${crds}"
}

# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

main() {
	expect_no_args "$@"

	command -v "${GO}" >/dev/null || die "'${GO}' not found; install Go or set GO"
	mkdir -p "${out}"

	lock_builds "${out}/.contour.lock"

	if [[ -x "${binary}" && "$(module_version "${binary}" "${CONTOUR_MODULE}")" == "${CONTOUR_VERSION}" ]]; then
		log "up to date (${CONTOUR_VERSION}), skipping build"
	else
		local -i started=${SECONDS}
		log "building contour ${CONTOUR_VERSION} (about 3 minutes on 2 busy cores from cold)"
		GOBIN="${out}" "${GO}" install -trimpath "${CONTOUR_MODULE}/cmd/contour@${CONTOUR_VERSION}" ||
			die "go install ${CONTOUR_MODULE}/cmd/contour@${CONTOUR_VERSION} failed"
		[[ "$(module_version "${binary}" "${CONTOUR_MODULE}")" == "${CONTOUR_VERSION}" ]] ||
			die "${binary} was not built from ${CONTOUR_MODULE} ${CONTOUR_VERSION}"
		log "built contour in $((SECONDS - started)) s"
	fi
	"${binary}" --help >/dev/null 2>&1 || die "${binary} does not start"
	copy_crds
	printf '%s\n' "${binary}"
}

main "$@"
