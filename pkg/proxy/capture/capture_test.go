package capture

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--include-inbound-ports", "80,0"}, `--include-inbound-ports: "0" is not a port (1 to 65535)`},
		{[]string{"--exclude-inbound-ports", "http"}, `--exclude-inbound-ports: "http" is not a port (1 to 65535)`},
		{[]string{"--exclude-outbound-ports", "65536"}, `--exclude-outbound-ports: "65536" is not a port (1 to 65535)`},
		{[]string{"--include-outbound-cidrs", "10.0.0.0/8,nope"}, `--include-outbound-cidrs: "nope" is not a CIDR`},
		{[]string{"--exclude-outbound-cidrs", "::/200"}, `--exclude-outbound-cidrs: "::/200" is not a CIDR`},
		{[]string{"--outbound-capture-port", "70000"}, "--outbound-capture-port: 70000 is not a port (1 to 65535)"},
		{[]string{"--proxy-uid", "-1"}, "invalid argument"},
		{[]string{"--unknown"}, "unknown flag: --unknown"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		if code := Run(tc.args, &out, &errb); code != 1 {
			t.Errorf("%v: exit %d, want 1", tc.args, code)
		}
		if !strings.Contains(errb.String(), "error: capture: ") || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, errb.String(), tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--exclude-outbound-cidrs") || errb.Len() != 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestDryRun(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run([]string{"--dry-run", "--proxy-uid", "1337", "--proxy-gid", "1338",
		"--include-inbound-ports", "8080, 9090", "--exclude-inbound-ports", "9090",
		"--include-outbound-cidrs", "10.0.0.0/8,fd00::/8", "--exclude-outbound-cidrs", "10.1.2.3",
		"--exclude-outbound-ports", "53"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := `table ip outrigger {
	chain OUTRIGGER_INBOUND {
		type nat hook prerouting priority -100; policy accept;
		meta l4proto tcp tcp dport 9090 return
		meta l4proto tcp tcp dport 8080 redirect to :15006
	}
	chain OUTRIGGER_OUTPUT {
		type nat hook output priority -100; policy accept;
		meta l4proto tcp meta skuid 1337 return
		meta l4proto tcp meta skgid 1338 return
		meta l4proto tcp oifname "lo" return
		meta l4proto tcp ip daddr 10.1.2.3/32 return
		meta l4proto tcp tcp dport 53 return
		meta l4proto tcp ip daddr 10.0.0.0/8 redirect to :15001
	}
}
table ip6 outrigger {
	chain OUTRIGGER_INBOUND {
		type nat hook prerouting priority -100; policy accept;
		meta l4proto tcp tcp dport 9090 return
		meta l4proto tcp tcp dport 8080 redirect to :15006
	}
	chain OUTRIGGER_OUTPUT {
		type nat hook output priority -100; policy accept;
		meta l4proto tcp meta skuid 1337 return
		meta l4proto tcp meta skgid 1338 return
		meta l4proto tcp oifname "lo" return
		meta l4proto tcp tcp dport 53 return
		meta l4proto tcp ip6 daddr fd00::/8 redirect to :15001
	}
}
`
	if out.String() != want {
		t.Errorf("dry run:\n%s\nwant:\n%s", out.String(), want)
	}

	// Nothing to capture leaves empty chains; --cleanup deletes.
	out.Reset()
	if code := Run([]string{"--dry-run", "--include-inbound-ports", "", "--include-outbound-cidrs", ""}, &out, &errb); code != 0 || strings.Contains(out.String(), "redirect") {
		t.Errorf("nothing included: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := Run([]string{"--dry-run", "--cleanup"}, &out, &errb); code != 0 || out.String() != "delete table ip outrigger\ndelete table ip6 outrigger\n" {
		t.Errorf("cleanup: exit %d\n%s", code, out.String())
	}
}
