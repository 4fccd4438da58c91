#!/usr/bin/env bash
# Fails when the generated files (the CRDs in config/crd/bases, the RBAC
# role in config/rbac, the injection webhook's configuration in
# config/webhook, the API types' deepcopy code) differ from what
# controller-gen makes from the markers now, printing the difference and
# the command that brings them up to date.
#
# It generates into a scratch folder and compares, so it neither needs git
# nor touches the tree.
set -euo pipefail

readonly GO="${GO:-go}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
scratch="$(mktemp -d)"
readonly scratch
trap 'rm -rf "${scratch}"' EXIT

cd "${root}"
gen() { "${GO}" tool controller-gen "$@"; }

gen crd paths=./pkg/apis/... "output:crd:artifacts:config=${scratch}/crd"
gen rbac:roleName=outrigger-controller paths=./pkg/controller/... "output:rbac:artifacts:config=${scratch}/rbac"
gen webhook paths=./pkg/controller/inject/... "output:webhook:artifacts:config=${scratch}/webhook"
gen object paths=./pkg/apis/... "output:object:dir=${scratch}/object"

stale=0
compare() {
	local want="$1" got="$2"
	if ! diff -ru "${got}" "${want}"; then
		stale=1
	fi
}
compare "${scratch}/crd" config/crd/bases
# The Helm chart ships copies of the CRDs (make manifests refreshes them).
compare config/crd/bases charts/outrigger/crds
compare "${scratch}/rbac" config/rbac
compare "${scratch}/webhook" config/webhook
compare "${scratch}/object/zz_generated.deepcopy.go" pkg/apis/proxy/v1alpha1/zz_generated.deepcopy.go

if ((stale)); then
	echo "check-manifests: generated files are stale; run: make generate manifests" >&2
	exit 1
fi
echo "check-manifests: generated files are up to date" >&2
