package options

import (
	"crypto/fips140"
	"runtime/debug"
	"strings"
)

// Release is the release number reported by --version and /server_info;
// a development build carries the -dev suffix.
const Release = "0.1.0-dev"

// unknownRevision stands for the source revision when the binary was built
// without VCS information (go build -buildvcs=false, or outside a checkout).
const unknownRevision = "0000000000000000000000000000000000000000"

// BuildVersion is the five-field version string of --version and
// /server_info: <revision>/<release>/<Clean|Modified>/<RELEASE|DEBUG>/<TLS>.
// The revision and tree state come from the Go build information; the TLS
// field names Go's TLS stack, with -FIPS when Go's FIPS 140 mode is on.
func BuildVersion() string {
	info, _ := debug.ReadBuildInfo() // nil without build info; handled below
	return buildVersion(info, fips140.Enabled())
}

// buildVersion is BuildVersion with its inputs passed in, for tests.
func buildVersion(info *debug.BuildInfo, fips bool) string {
	revision, tree, mode := unknownRevision, "Clean", "RELEASE"
	var settings []debug.BuildSetting
	if info != nil {
		settings = info.Settings
	}
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				revision = s.Value
			}
		case "vcs.modified":
			if s.Value == "true" {
				tree = "Modified"
			}
		case "-race":
			if s.Value == "true" {
				mode = "DEBUG"
			}
		case "-gcflags":
			if disablesOptimizations(s.Value) {
				mode = "DEBUG"
			}
		}
	}
	tls := "GoTLS"
	if fips {
		tls += "-FIPS"
	}
	return strings.Join([]string{revision, Release, tree, mode, tls}, "/")
}

// disablesOptimizations reports whether a -gcflags value holds -N (which
// turns optimizations off, as debuggers want), with or without a package
// pattern ("all=-N -l").
func disablesOptimizations(gcflags string) bool {
	for _, f := range strings.Fields(gcflags) {
		if _, after, ok := strings.Cut(f, "="); ok {
			f = after
		}
		if f == "-N" {
			return true
		}
	}
	return false
}
