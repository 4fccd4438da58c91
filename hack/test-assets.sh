#!/usr/bin/env bash
# Builds the cluster test tier's kube-apiserver and etcd from Go modules.
#
# The test machines reach no download site but the Go module proxy, so the
# binaries envtest needs (usually fetched prebuilt by setup-envtest) are
# compiled here from their Go modules instead. Each one lands in
# bin/test-assets/ (git-ignored) and is rebuilt only when it is missing or
# does not report the pinned version, so a warm run takes seconds. The module
# and build caches (GOMODCACHE, GOCACHE) are left where they are so that a
# rebuild after a version bump reuses everything that did not change.
#
# Progress goes to stderr; the only line on stdout is the assets folder, so
#   export KUBEBUILDER_ASSETS="$(hack/test-assets.sh)"
# works as is.
set -euo pipefail

# Pinned versions: the newest 1.35.x and 3.6.x the module proxy serves
# (`go list -m -versions k8s.io/kubernetes go.etcd.io/etcd/server/v3`).
readonly KUBERNETES_VERSION=v1.35.4
readonly ETCD_VERSION=v3.6.16

# k8s.io/kubernetes v1.X.Y ships its staging modules (k8s.io/api,
# k8s.io/apiserver, ...) as v0.X.Y.
readonly STAGING_VERSION="v0.${KUBERNETES_VERSION#v1.}"

# What each pinned binary's --version prints first.
readonly KUBE_APISERVER_VERSION_LINE="Kubernetes ${KUBERNETES_VERSION}"
readonly ETCD_VERSION_LINE="etcd Version: ${ETCD_VERSION#v}"

readonly GO="${GO:-go}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly out="${TEST_ASSETS_DIR:-${root}/bin/test-assets}"

# The generated modules are standalone: a go.work above them must not pull
# them into a workspace.
export GOWORK=off

usage() {
	cat <<EOF
Usage: hack/test-assets.sh [-h|--help]

Builds kube-apiserver ${KUBERNETES_VERSION} and etcd ${ETCD_VERSION} from Go modules into
${out}
(override with TEST_ASSETS_DIR), skipping each binary that is already there
and reports its pinned version, then prints that folder for KUBEBUILDER_ASSETS.

Environment:
  GO               go command to use (default: go)
  TEST_ASSETS_DIR  output folder (default: <repo>/bin/test-assets)
EOF
}

log() { printf 'test-assets: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# first_line prints the first line of a command's output, or nothing when the
# command fails or hangs (a half-written or foreign binary must not stop the
# script; it is rebuilt instead).
first_line() {
	local output
	output="$(timeout 60 "$@" 2>/dev/null)" || return 0
	printf '%s\n' "${output%%$'\n'*}"
}

# is_current reports whether binary exists and the first line of its
# --version is want.
is_current() {
	local binary="$1" want="$2" got
	[[ -x "${binary}" ]] || return 1
	got="$(first_line "${binary}" --version)"
	[[ "${got}" == "${want}" ]]
}

# verify fails unless the freshly built binary starts and reports want.
verify() {
	local binary="$1" want="$2" got
	got="$(first_line "${binary}" --version)"
	[[ "${got}" == "${want}" ]] ||
		die "${binary} --version printed '${got}', want '${want}'"
	log "${binary##*/} --version: ${got}"
}

# new_module creates an empty throwaway module in dir, replacing any left
# over from an earlier (possibly interrupted) run.
new_module() {
	local dir="$1" path="$2"
	rm -rf "${dir}"
	mkdir -p "${dir}"
	"${GO}" -C "${dir}" mod init "${path}" >&2 ||
		die "go mod init ${path} failed in ${dir}"
}

# staging_modules prints the module paths that k8s.io/kubernetes' go.mod
# replaces with its own ./staging/ directories. Those replaces are ignored in
# a dependent module, so the dependent must repeat them with real versions.
staging_modules() {
	local gomod="$1"
	sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[^[:space:]]+)([[:space:]]+v[^[:space:]]+)?[[:space:]]+=>[[:space:]]+\./staging/.*#\2#p' "${gomod}"
}

build_kube_apiserver() {
	local src="${out}/src/kube-apiserver" gomod info infofile mods mod replaces=()
	local date major minor pkg ldflags="-s -w"
	local -i started=${SECONDS}

	log "building kube-apiserver ${KUBERNETES_VERSION} (about 3 minutes on 2 idle cores from cold, more when they are busy)"
	info="$("${GO}" mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}")" ||
		die "go mod download k8s.io/kubernetes@${KUBERNETES_VERSION} failed: ${info}"
	gomod="$(sed -nE 's#^[[:space:]]*"GoMod": "(.*)",?$#\1#p' <<<"${info}")"
	infofile="$(sed -nE 's#^[[:space:]]*"Info": "(.*)",?$#\1#p' <<<"${info}")"
	[[ -f "${gomod}" && -f "${infofile}" ]] ||
		die "no go.mod or .info for k8s.io/kubernetes@${KUBERNETES_VERSION} in the module cache"

	mods="$(staging_modules "${gomod}")"
	for mod in ${mods}; do
		replaces+=("-replace=${mod}=${mod}@${STAGING_VERSION}")
	done
	((${#replaces[@]} > 0)) || die "found no ./staging/ replaces in ${gomod}"
	log "mapping ${#replaces[@]} staging modules to ${STAGING_VERSION}"

	new_module "${src}" outrigger-test-assets/kube-apiserver
	"${GO}" -C "${src}" mod edit \
		"-require=k8s.io/kubernetes@${KUBERNETES_VERSION}" \
		"${replaces[@]}" \
		-tool=k8s.io/kubernetes/cmd/kube-apiserver ||
		die "go mod edit failed in ${src}"
	"${GO}" -C "${src}" mod tidy >&2 || die "go mod tidy failed in ${src}"

	# Stamp the version the way Kubernetes' own build does
	# (hack/lib/version.sh), with the release's date in place of the build
	# date so that the binary is reproducible.
	date="$(sed -nE 's#.*"Time": *"([^"]*)".*#\1#p' "${infofile}")"
	IFS=. read -r major minor _ <<<"${KUBERNETES_VERSION#v}"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION}"
		ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
		ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${date}"
	done
	"${GO}" -C "${src}" build -buildvcs=false -ldflags "${ldflags}" \
		-o "${out}/.kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver ||
		die "go build k8s.io/kubernetes/cmd/kube-apiserver@${KUBERNETES_VERSION} failed in ${src}"
	mv -f "${out}/.kube-apiserver.tmp" "${out}/kube-apiserver"
	log "built kube-apiserver in $((SECONDS - started)) s"
}

build_etcd() {
	local src="${out}/src/etcd"
	local -i started=${SECONDS}

	log "building etcd ${ETCD_VERSION} (under a minute on 2 idle cores from cold)"
	new_module "${src}" outrigger-test-assets/etcd
	# The same entry point as etcd's own server binary.
	cat >"${src}/main.go" <<'EOF'
// Command etcd is etcd's server, built from its Go module for the cluster
// test tier. Generated by hack/test-assets.sh.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
EOF
	"${GO}" -C "${src}" mod edit "-require=go.etcd.io/etcd/server/v3@${ETCD_VERSION}" ||
		die "go mod edit failed in ${src}"
	"${GO}" -C "${src}" mod tidy >&2 || die "go mod tidy failed in ${src}"
	"${GO}" -C "${src}" build -buildvcs=false -ldflags "-s -w" -o "${out}/.etcd.tmp" . ||
		die "go build etcd ${ETCD_VERSION} failed in ${src}"
	mv -f "${out}/.etcd.tmp" "${out}/etcd"
	log "built etcd in $((SECONDS - started)) s"
}

# ensure builds one binary unless the one already there is current, then
# checks that it starts.
ensure() {
	local name="$1" want="$2" build="$3"
	if is_current "${out}/${name}" "${want}"; then
		log "${name}: up to date (${want}), skipping build"
		return
	fi
	if [[ -e "${out}/${name}" ]]; then
		log "${name}: present but does not report '${want}', rebuilding"
	fi
	"${build}"
	verify "${out}/${name}" "${want}"
}

# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

main() {
	expect_no_args "$@"

	command -v "${GO}" >/dev/null || die "'${GO}' not found; install Go or set GO"
	mkdir -p "${out}"

	lock_builds "${out}/.lock"

	ensure etcd "${ETCD_VERSION_LINE}" build_etcd
	ensure kube-apiserver "${KUBE_APISERVER_VERSION_LINE}" build_kube_apiserver

	printf '%s\n' "${out}"
}

main "$@"
