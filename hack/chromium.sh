#!/usr/bin/env bash
# Installs Debian's chromium package for the browser test (test/browser)
# when it is missing, and prints the browser's path.
#
# The test machines reach Debian's package mirror (the only download site
# besides the Go module proxy), so the browser comes from apt: one
# `apt-get update`, then `apt-get install -y chromium`. A warm run finds the
# binary and returns at once.
#
# Progress goes to stderr; the only line on stdout is the browser's path, so
#   CHROMIUM="$(hack/chromium.sh)"
# works as is.
set -euo pipefail

readonly binary="${CHROMIUM:-/usr/bin/chromium}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root

usage() {
	cat <<EOF
Usage: hack/chromium.sh [-h|--help]

Installs Debian's chromium package when ${binary} is missing (as root, or
through sudo), then prints the browser's path.

Environment:
  CHROMIUM  browser to use instead of /usr/bin/chromium (nothing is installed)
EOF
}

log() { printf 'chromium: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

# as_root runs its arguments as root: directly when already root, else
# through sudo when there is one.
as_root() {
	if [[ "$(id -u)" == 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "not root and no sudo: install chromium by hand (apt-get install chromium) or set CHROMIUM"
	fi
}

main() {
	expect_no_args "$@"

	if [[ -x "${binary}" ]]; then
		log "found ${binary}"
	elif [[ -n "${CHROMIUM:-}" ]]; then
		die "CHROMIUM=${CHROMIUM} is not an executable"
	else
		command -v apt-get >/dev/null || die "no apt-get: install chromium by hand or set CHROMIUM"
		mkdir -p "${root}/bin"
		lock_builds "${root}/bin/.chromium.lock"
		if [[ ! -x "${binary}" ]]; then
			local -i started=${SECONDS}
			log "installing Debian's chromium package (a minute or two)"
			as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
				die "apt-get update failed"
			as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2 ||
				die "apt-get install chromium failed"
			[[ -x "${binary}" ]] || die "the chromium package did not install ${binary}"
			log "installed in $((SECONDS - started)) s"
		fi
	fi
	"${binary}" --version 2>/dev/null >&2 || die "${binary} does not start"
	printf '%s\n' "${binary}"
}

main "$@"
