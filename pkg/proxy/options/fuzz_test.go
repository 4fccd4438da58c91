package options

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
)

// argSeparator joins a command line into one fuzz input; NUL cannot occur
// inside a real argument.
const argSeparator = "\x00"

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(strings.Join(tc.args, argSeparator))
	}
	for _, tc := range parseErrorCases {
		f.Add(strings.Join(tc.args, argSeparator))
	}
	f.Add(strings.Join(fullArgs, argSeparator))
	f.Fuzz(func(t *testing.T, input string) {
		var args []string
		if input != "" {
			args = strings.Split(input, argSeparator)
		}
		got, err := Parse(args, testEnv)
		again, errAgain := Parse(args, testEnv)
		if (err == nil) != (errAgain == nil) || cmp.Diff(got, again) != "" {
			t.Fatalf("Parse(%q) is not deterministic: %v / %v", args, err, errAgain)
		}
		if err != nil {
			msg := err.Error()
			if got != nil {
				t.Errorf("Parse(%q) returned options with error %q", args, msg)
			}
			if msg == "" || strings.ContainsAny(msg, "\n\r") || strings.HasPrefix(msg, "error:") {
				t.Errorf("Parse(%q) error %q is not one line without an error: prefix", args, msg)
			}
			return
		}
		switch got.Action {
		case ActionHelp, ActionVersion:
			return
		case ActionRun:
			if got.ConfigPath == "" && got.ConfigYAML == "" {
				t.Errorf("Parse(%q) accepted a run without configuration", args)
			}
		}
		if got.Concurrency < 1 {
			t.Errorf("Parse(%q).Concurrency = 0", args)
		}
		if got.MaxObjNameLen < DefaultMaxObjNameLen || got.MaxStats > MaxMaxStats {
			t.Errorf("Parse(%q) accepted out-of-range sizes %d/%d", args, got.MaxObjNameLen, got.MaxStats)
		}
		if got.SocketMode > 0o777 || (strings.HasPrefix(got.SocketPath, "@") && got.SocketMode != 0) {
			t.Errorf("Parse(%q) gave socket %q mode %o", args, got.SocketPath, got.SocketMode)
		}
		if _, err := protojson.Marshal(got.CommandLineOptions()); err != nil {
			t.Errorf("CommandLineOptions of Parse(%q) does not marshal: %v", args, err)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3\n", "0-3,6,8-9", "3-1", "", "0-65535", "a-b", "1,", "0-1,0-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := CountCPUList(s)
		if err == nil && (n < 1 || n > maxCPUs) {
			t.Errorf("CountCPUList(%q) = %d, outside [1, %d]", s, n, maxCPUs)
		}
	})
}
