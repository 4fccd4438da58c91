package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestBadCommandLines checks that every bad command line is refused with
// one line on stderr and exit code 1, before anything starts.
func TestBadCommandLines(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown flag":        {args: []string{"--frobnicate"}, want: "error: unknown flag: --frobnicate\n"},
		"unknown transport":   {args: []string{"--transport=carrier-pigeon"}, want: "error: --transport: \"carrier-pigeon\" is not portforward or direct\n"},
		"no workers":          {args: []string{"--workers=0"}, want: "error: --workers: 0 is below 1\n"},
		"workers not a count": {args: []string{"--workers=many"}, want: "error: invalid argument \"many\" for \"--workers\" flag: strconv.ParseInt: parsing \"many\": invalid syntax\n"},
		"unknown log level":   {args: []string{"--log-level=loud"}, want: "error: --log-level: \"loud\" is not debug, info, warning or error\n"},
		"empty namespace":     {args: []string{"--namespaces=a,,b"}, want: "error: --namespaces: empty namespace name\n"},
		"zero admin timeout":  {args: []string{"--admin-timeout=0s"}, want: "error: --admin-timeout: 0s is not positive\n"},
		"bad duration":        {args: []string{"--poll-interval=soon"}, want: "error: invalid argument \"soon\" for \"--poll-interval\" flag: time: invalid duration \"soon\"\n"},
		"two errors, one line": {
			args: []string{"--workers=0", "--transport=x"},
			want: "error: --transport: \"x\" is not portforward or direct; --workers: 0 is below 1\n",
		},
		"stray argument":     {args: []string{"run"}, want: "error: unexpected argument \"run\"\n"},
		"missing kubeconfig": {args: []string{"--kubeconfig=/nonexistent/kubeconfig"}, want: "error: --kubeconfig: stat /nonexistent/kubeconfig: no such file or directory\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stdout, &stderr)
			if code != 1 || stderr.String() != tc.want || stdout.Len() != 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 1 and %q", code, stderr.String(), stdout.String(), tc.want)
			}
			if strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr.String())
			}
		})
	}
}

// TestHelp prints the usage on stdout and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{arg}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, stderr.String())
		}
		golden.Check(t, filepath.Join("testdata", "help.txt"), stdout.Bytes())
	}
}
