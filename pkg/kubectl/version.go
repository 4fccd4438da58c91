package kubectl

import (
	"context"
	"fmt"
	"runtime/debug"
)

// versionCommand is `version`.
func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the plugin's version",
		run:     runVersion,
	}
}

// runVersion prints the module version and VCS revision the binary was
// built from.
func runVersion(_ context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("version: takes no arguments")
	}
	_, err := fmt.Fprintln(a.stdout, "kubectl-outrigger "+buildVersion())
	return err
}

// releaseVersion is the release a build is stamped with by the linker
// (hack/plugin-dist.sh: -X ...kubectl.releaseVersion=vX.Y.Z); it is never
// written at run time. Empty otherwise, where `go install ...@vX.Y.Z` gives
// the module version instead.
var releaseVersion string

// buildVersion is "<version> (revision <rev>[, modified])" from the
// release stamp or the binary's build information.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	v := releaseVersion
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	rev, modified := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	v += " (revision " + rev
	if modified {
		v += ", modified"
	}
	return v + ")"
}
