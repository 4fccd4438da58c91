package server

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TestListenAdminPipe: the admin interface on a pipe, as Envoy binds one:
// a file left at the path is replaced, the mode is set.
func TestListenAdminPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	if err := os.WriteFile(path, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, addr, err := listenAdmin(&corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path, Mode: 0o640}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if addr != path {
		t.Errorf("address %q, want the path", addr)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want a socket with 0640", fi.Mode())
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}

func TestListenAdminPipeErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		pipe *corev3.Pipe
		want string
	}{
		"abstract with a mode": {&corev3.Pipe{Path: "@outrigger-admin-test", Mode: 0o600}, "pipe.mode: cannot be set on an abstract socket"},
		"no such directory":    {&corev3.Pipe{Path: "/nonexistent-dir/admin.sock"}, "cannot bind the admin address /nonexistent-dir/admin.sock"},
	} {
		t.Run(name, func(t *testing.T) {
			ln, _, err := listenAdmin(&corev3.Address{Address: &corev3.Address_Pipe{Pipe: tc.pipe}}, nil)
			if err == nil {
				_ = ln.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
