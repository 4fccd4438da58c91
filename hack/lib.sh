# Functions shared by the build scripts in hack/. Source it after defining
# usage() and log(); it defines nothing else and runs nothing.

# expect_no_args handles a script's arguments: none runs it, -h or --help
# prints the usage and exits 0, anything else prints the usage to stderr
# and exits 2.
expect_no_args() {
	case "$#:${1:-}" in
	0:) ;;
	1:-h | 1:--help)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
}

# lock_builds holds the lock file $1 on descriptor 9 until the script ends.
# Two runs at once (parallel make, two terminals) would build into the same
# files; the second waits for the first, and then finds its work done.
# Without flock (not on Linux), nothing is locked.
lock_builds() {
	command -v flock >/dev/null || return 0
	exec 9>"$1"
	if ! flock -n 9; then
		log "another build is running in $(dirname "$1"); waiting for it"
		flock 9
	fi
}

# module_version prints the version of Go module $2 that binary $1 was
# built from, as recorded in its build information (`go version -m`, with
# the go command in GO): a binary stamped by hand cannot pass.
module_version() {
	"${GO}" version -m "$1" 2>/dev/null |
		awk -v mod="$2" '$1 == "mod" && $2 == mod { print $3 }'
}
