#!/usr/bin/env bash
# Makes sure the tools the transparent-capture tests (test/e2e/capture) use
# are installed: ip (iproute2) for network namespaces and veth pairs, and
# nsenter (util-linux) to start the proxy in a namespace as its own user.
# Missing ones are installed from Debian's packages (apt-get update first,
# once). The rules themselves need no tool: `sidecar capture` programs
# nf_tables over netlink.
#
# Without root nothing can be installed or tested: the script says so and
# exits 0, and the tests skip with the same message.
set -euo pipefail

usage() {
	echo "usage: hack/netns-tools.sh"
	echo "Installs iproute2 and util-linux from Debian when ip or nsenter is missing."
}

log() { echo "netns-tools: $*" >&2; }

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_no_args "$@"

if [ "$(id -u)" != 0 ]; then
	log "SKIPPED: the transparent-capture tests need root (network namespaces, nf_tables)"
	exit 0
fi

missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v nsenter >/dev/null || missing+=(util-linux)
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
