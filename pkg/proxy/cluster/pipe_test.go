package cluster

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestPipeEndpoint: a STATIC cluster's pipe endpoint is a host whose
// address is the path, and connections to it go over the unix socket.
func TestPipeEndpoint(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "up.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, "hello")
		_ = c.Close()
	}()
	m, _, _ := newTestManager(t, `
- name: admin
  connect_timeout: 1s
  load_assignment:
    cluster_name: admin
    endpoints: [{lb_endpoints: [{endpoint: {address: {pipe: {path: "`+sock+`", mode: 0644}}}}]}]
`)
	c := m.Cluster("admin")
	hosts := c.Hosts()
	if len(hosts) != 1 || hosts[0].Address != sock {
		t.Fatalf("hosts %v, want one at %s", hosts, sock)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want hello", got, err)
	}
}

func TestPipeEndpointErrors(t *testing.T) {
	for name, tc := range map[string]struct{ cluster, want string }{
		"relative path": {
			`{name: a, connect_timeout: 1s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {pipe: {path: admin.sock}}}}]}]}}`,
			`load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.pipe.path: "admin.sock" is neither an absolute path nor an abstract socket name (@name)`,
		},
		"DNS cluster": {
			`{name: a, type: STRICT_DNS, connect_timeout: 1s, load_assignment: {cluster_name: a, endpoints: [{lb_endpoints: [{endpoint: {address: {pipe: {path: /a.sock}}}}]}]}}`,
			`endpoint.address.socket_address: required`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, "- "+tc.cluster), Options{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
