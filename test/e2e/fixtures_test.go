package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"text/template"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Bootstrap describes the configuration a spec starts a sidecar with. The
// zero value is the smallest valid bootstrap: an admin listener on
// 127.0.0.1, port 0.
type Bootstrap struct {
	AdminPort     int    // 0 lets the kernel pick; the sidecar reports the port
	AccessLogPath string // admin.access_log_path
	AccessLogFile string // admin.access_log with the file access logger
	ProfilePath   string // admin.profile_path
	Node          *Node
	Runtime       []RuntimeLayer
	Listeners     []Listener
}

// Node is the bootstrap node identity.
type Node struct{ ID, Cluster, Zone string }

// RuntimeLayer is one layer of layered_runtime: a static layer when Static is
// set, a disk layer when DiskRoot is, an admin layer otherwise.
type RuntimeLayer struct {
	Name       string
	Static     map[string]string
	DiskRoot   string
	DiskSubdir string
}

// Listener is an HTTP listener whose routes answer directly.
type Listener struct {
	Name   string
	Port   int
	Routes []DirectRoute
}

// DirectRoute answers requests for exactly Path with Status and Body.
type DirectRoute struct {
	Path   string
	Status int
	Body   string
}

// YAML renders the bootstrap from testdata/bootstrap.yaml.tmpl.
func (b Bootstrap) YAML() string {
	GinkgoHelper()
	tmpl, err := template.New("bootstrap.yaml.tmpl").
		Funcs(template.FuncMap{"q": yamlQuote}).
		ParseFiles(filepath.Join("testdata", "bootstrap.yaml.tmpl"))
	Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	Expect(tmpl.Execute(&out, b)).To(Succeed())
	return out.String()
}

// yamlQuote quotes s as a JSON string, which YAML reads as the same
// double-quoted scalar, so paths and bodies need no further escaping.
func yamlQuote(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// helloListener is a listener on port answering /hello with 200 and body.
func helloListener(name string, port int, body string) Listener {
	return Listener{Name: name, Port: port, Routes: []DirectRoute{{Path: "/hello", Status: 200, Body: body}}}
}

// newDir returns a fresh directory for one spec, removed after it.
func newDir() string {
	GinkgoHelper()
	return GinkgoT().TempDir()
}

// freePort returns a loopback TCP port that was free a moment ago. The
// listeners under test need a port known in advance (the /listeners endpoint
// that would report a port 0 listener's port comes later). Ports are handed
// out in turn from below the kernel's ephemeral range (32768 and up on
// Linux): a port the kernel picks for a port-0 bind, such as a sidecar's
// admin listener, then never lands on one a spec set aside for a listener it
// has not bound yet, and no two calls in a run return the same port.
//
// Each port is also leased across processes (leasePort): two e2e runs on one
// machine could otherwise both find a port free before either sidecar binds
// it, and since listeners bind with SO_REUSEPORT, as Envoy's do, both
// sidecars would then share it and answer each other's requests.
func freePort() int {
	GinkgoHelper()
	for range freePortSpan {
		port := freePortLow + int(nextFreePort.Add(1))%freePortSpan
		if !leasePort(port) {
			continue // another e2e process holds it
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken by something else: the next one
		}
		Expect(l.Close()).To(Succeed())
		return port
	}
	Fail("no free loopback port below the ephemeral range")
	return 0
}

// The ports freePort hands out, and its cursor: a run starts at a random
// point of the span so that two runs at once rarely walk the same ports.
const (
	freePortLow  = 20000
	freePortSpan = 32768 - freePortLow
)

var nextFreePort = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(rand.Int64N(freePortSpan))
	return &n
}()

// holdPort listens on a loopback port until the spec ends and returns the
// port: a sidecar told to bind it cannot.
func holdPort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	return l.Addr().(*net.TCPAddr).Port
}

// readFile returns the file's contents, or "" while it does not exist.
func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// writeFile writes a fixture file, creating its directory.
func writeFile(path, content string) {
	GinkgoHelper()
	Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
}

// listenerURL is the URL of path on a listener started on port.
func listenerURL(port int, path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
}
