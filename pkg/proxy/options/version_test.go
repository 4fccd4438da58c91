package options

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersionFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	setting := func(kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for i := 0; i+1 < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	tests := map[string]struct {
		info *debug.BuildInfo
		fips bool
		want string
	}{
		"no build info":       {info: nil, want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"no vcs settings":     {info: setting("-trimpath", "true"), want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"clean checkout":      {info: setting("vcs.revision", rev, "vcs.modified", "false"), want: rev + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"modified checkout":   {info: setting("vcs.revision", rev, "vcs.modified", "true"), want: rev + "/" + Release + "/Modified/RELEASE/GoTLS"},
		"race detector":       {info: setting("vcs.revision", rev, "-race", "true"), want: rev + "/" + Release + "/Clean/DEBUG/GoTLS"},
		"optimizations off":   {info: setting("-gcflags", "all=-N -l"), want: unknownRevision + "/" + Release + "/Clean/DEBUG/GoTLS"},
		"bare -N":             {info: setting("-gcflags", "-N"), want: unknownRevision + "/" + Release + "/Clean/DEBUG/GoTLS"},
		"other gcflags":       {info: setting("-gcflags", "all=-l -B"), want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"flag containing N":   {info: setting("-gcflags", "-Nope"), want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"fips mode":           {info: setting("vcs.revision", rev), fips: true, want: rev + "/" + Release + "/Clean/RELEASE/GoTLS-FIPS"},
		"empty revision":      {info: setting("vcs.revision", ""), want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
		"race off is release": {info: setting("-race", "false"), want: unknownRevision + "/" + Release + "/Clean/RELEASE/GoTLS"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := buildVersion(tc.info, tc.fips); got != tc.want {
				t.Errorf("buildVersion() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBuildVersionShape checks the real binary's string: the test binary's
// build info varies by machine, so only the fixed fields are compared.
func TestBuildVersionShape(t *testing.T) {
	fields := strings.Split(BuildVersion(), "/")
	if len(fields) != 5 {
		t.Fatalf("BuildVersion() = %q, want 5 slash-separated fields", BuildVersion())
	}
	if fields[1] != Release {
		t.Errorf("release field = %q, want %q", fields[1], Release)
	}
	if fields[2] != "Clean" && fields[2] != "Modified" {
		t.Errorf("tree field = %q, want Clean or Modified", fields[2])
	}
	if fields[3] != "RELEASE" && fields[3] != "DEBUG" {
		t.Errorf("build mode field = %q, want RELEASE or DEBUG", fields[3])
	}
	if fields[4] != "GoTLS" && fields[4] != "GoTLS-FIPS" {
		t.Errorf("TLS field = %q, want GoTLS or GoTLS-FIPS", fields[4])
	}
}
