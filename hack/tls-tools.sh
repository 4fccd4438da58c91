#!/usr/bin/env bash
# Makes sure the TLS clients the TLS tests drive are installed: curl
# and openssl. Missing ones are installed from Debian's packages (apt-get
# update first, once). Without root nothing can be installed: the script
# says so and exits 0, and the specs that need a missing tool skip.
set -euo pipefail

usage() {
	echo "usage: hack/tls-tools.sh"
	echo "Installs curl and openssl from Debian when missing."
}

log() { echo "tls-tools: $*" >&2; }

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_no_args "$@"

missing=()
command -v curl >/dev/null || missing+=(curl)
command -v openssl >/dev/null || missing+=(openssl)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "SKIPPED: cannot install ${missing[*]} without root; the TLS specs that need them skip"
	exit 0
fi
log "installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
