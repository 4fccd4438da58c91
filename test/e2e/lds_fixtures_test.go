package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ldsSource is how a bootstrap points at its listener discovery file.
type ldsSource int

const (
	// ldsPath names the file only: a move onto it triggers a reload.
	ldsPath ldsSource = iota
	// ldsWatchedDirectory also names its directory as watched_directory:
	// any move into the directory triggers a reload.
	ldsWatchedDirectory
)

// ldsFileName is the discovery file of a spec, inside its lds directory.
const ldsFileName = "lds.yaml"

// ldsBootstrap is a bootstrap with an admin on 127.0.0.1 (port 0), the
// given static listeners, and listeners discovered from ldsDir/lds.yaml.
func ldsBootstrap(ldsDir string, src ldsSource, statics ...listenerDef) string {
	GinkgoHelper()
	var b strings.Builder
	if len(statics) > 0 {
		b.WriteString(listenersBootstrap(statics...))
	} else {
		b.WriteString("admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}\n")
	}
	file, err := yamlQuote(filepath.Join(ldsDir, ldsFileName))
	Expect(err).NotTo(HaveOccurred())
	watched := ""
	if src == ldsWatchedDirectory {
		dir, err := yamlQuote(ldsDir)
		Expect(err).NotTo(HaveOccurred())
		watched = ", watched_directory: {path: " + dir + "}"
	}
	fmt.Fprintf(&b, "dynamic_resources:\n  lds_config:\n    resource_api_version: V3\n    path_config_source: {path: %s%s}\n", file, watched)
	return b.String()
}

// ldsResponse is a DiscoveryResponse (YAML) carrying the given listeners,
// each on 127.0.0.1, with version_info version.
func ldsResponse(version string, ls ...listenerDef) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version_info: %q\n", version)
	if len(ls) == 0 {
		b.WriteString("resources: []\n")
		return b.String()
	}
	b.WriteString("resources:\n")
	for _, l := range ls {
		b.WriteString("- " + l.flowYAML(`"@type": type.googleapis.com/envoy.config.listener.v3.Listener, `) + "\n")
	}
	return b.String()
}

// ldsSetup is a spec's discovery directory: the file starts with content
// (written in place, before the sidecar starts).
func ldsSetup(content string) string {
	GinkgoHelper()
	dir := filepath.Join(newDir(), "lds")
	writeFile(filepath.Join(dir, ldsFileName), content)
	return dir
}

// replaceLDS replaces ldsDir/lds.yaml with content the way a control
// plane (or a ConfigMap update) does: it writes a temporary file in the
// same directory and moves it over the old one, atomically.
func replaceLDS(ldsDir, content string) {
	GinkgoHelper()
	tmp, err := os.CreateTemp(ldsDir, ".lds-*.tmp")
	Expect(err).NotTo(HaveOccurred())
	_, err = tmp.WriteString(content)
	Expect(err).NotTo(HaveOccurred())
	Expect(tmp.Close()).To(Succeed())
	Expect(os.Rename(tmp.Name(), filepath.Join(ldsDir, ldsFileName))).To(Succeed())
}

// waitLive waits until /ready answers 200 LIVE.
func waitLive(s *Sidecar) {
	GinkgoHelper()
	Eventually(func() int { return s.Get("/ready").Status }).Should(Equal(200), "the sidecar becomes LIVE")
}

// waitStat waits until the stat name has value want (a reload is
// asynchronous: it follows the file's move within a moment).
func waitStat(s *Sidecar, name, want string) {
	GinkgoHelper()
	Eventually(func() string { return statValue(s, name) }).Should(Equal(want), "stat %s", name)
}

// listenerNames lists the names /listeners?format=json shows.
func listenerNames(s *Sidecar) []string {
	GinkgoHelper()
	var names []string
	for _, st := range listenerStatuses(s) {
		names = append(names, st.GetName())
	}
	return names
}

// listenersDump reads the ListenersConfigDump of /config_dump.
func listenersDump(s *Sidecar) *adminv3.ListenersConfigDump {
	GinkgoHelper()
	for _, c := range configDump(s, "/config_dump").GetConfigs() {
		if c.GetTypeUrl() == adminTypes+"ListenersConfigDump" {
			d := &adminv3.ListenersConfigDump{}
			Expect(c.UnmarshalTo(d)).To(Succeed())
			return d
		}
	}
	Fail("no ListenersConfigDump in /config_dump")
	return nil
}

// dynamicListeners reads /config_dump?resource=dynamic_listeners, by name.
func dynamicListeners(s *Sidecar) map[string]*adminv3.ListenersConfigDump_DynamicListener {
	GinkgoHelper()
	out := map[string]*adminv3.ListenersConfigDump_DynamicListener{}
	for _, c := range configDump(s, "/config_dump?resource=dynamic_listeners").GetConfigs() {
		dl := &adminv3.ListenersConfigDump_DynamicListener{}
		Expect(c.UnmarshalTo(dl)).To(Succeed())
		Expect(out).NotTo(HaveKey(dl.GetName()), "one entry per listener name")
		out[dl.GetName()] = dl
	}
	return out
}

// getBody sends GET / to addr on a new connection and returns the body.
func getBody(addr string) string {
	GinkgoHelper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	return httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body
}

// keptConn is one client TCP connection carrying HTTP/1.1 requests one
// after the other, so a spec knows for certain that a later request
// travels on the connection opened before a change.
type keptConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialKept opens a connection to addr, closed when the spec ends.
func dialKept(addr string) *keptConn {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return &keptConn{conn: c, r: bufio.NewReader(c)}
}

// get sends GET / on the connection and returns the body and whether the
// answer closes the connection.
func (k *keptConn) get() (string, bool) {
	GinkgoHelper()
	Expect(k.conn.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	_, err := io.WriteString(k.conn, "GET / HTTP/1.1\r\nHost: lds.test\r\n\r\n")
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(k.r, nil)
	Expect(err).NotTo(HaveOccurred(), "an answer on the kept connection")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b), resp.Close
}

// Bounds of the update load loop: enough requests to straddle a reload,
// few enough for a shared two-core machine.
const (
	updateLoadClients     = 4
	updateLoadMaxRequests = 400 // per client
	updateLoadDuration    = 4 * time.Second
)

// updateLoadResult is what the update load loop saw.
type updateLoadResult struct {
	bodies      map[string]int // complete 200 answers, by body
	failed      int
	errors      []string
	backwards   int // answers with the old body after the same client saw the new one
	afterUpdate int // answers received after the update was made
}

// runLoadAcross sends GET / to addr from updateLoadClients keep-alive
// clients, calls update from the calling goroutine once every client has
// had an answer, and keeps the load going until each client has seen
// the new body (or the bounds are reached). Answers other than a 200 with
// oldBody or newBody count as failures.
func runLoadAcross(addr, oldBody, newBody string, update func()) updateLoadResult {
	GinkgoHelper()
	var (
		mu      sync.Mutex
		res     = updateLoadResult{bodies: map[string]int{}}
		wg      sync.WaitGroup
		started sync.WaitGroup
		updated = make(chan struct{})
	)
	deadline := time.Now().Add(updateLoadDuration)
	started.Add(updateLoadClients)
	for range updateLoadClients {
		wg.Go(func() {
			defer GinkgoRecover()
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			first, sawNew, newAfterUpdate := true, false, 0
			for i := 0; i < updateLoadMaxRequests && time.Now().Before(deadline) && newAfterUpdate < 20; i++ {
				resp, err := client.Get("http://" + addr + "/")
				var got []byte
				if err == nil {
					got, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				isUpdated := false
				select {
				case <-updated:
					isUpdated = true
				default:
				}
				mu.Lock()
				switch {
				case err != nil:
					res.failed++
					res.errors = append(res.errors, err.Error())
				case resp.StatusCode != http.StatusOK || (string(got) != oldBody && string(got) != newBody):
					res.failed++
					res.errors = append(res.errors, fmt.Sprintf("%d %q", resp.StatusCode, got))
				default:
					res.bodies[string(got)]++
					if string(got) == newBody {
						sawNew = true
						if isUpdated {
							newAfterUpdate++
						}
					} else if sawNew {
						res.backwards++
					}
				}
				if isUpdated {
					res.afterUpdate++
				}
				mu.Unlock()
				if first {
					first = false
					started.Done()
				}
			}
			if first {
				started.Done()
			}
		})
	}
	started.Wait()
	update()
	close(updated)
	wg.Wait()
	return res
}

// timestampPattern matches the times of config dumps, which golden files
// show as TIMESTAMP.
var timestampPattern = regexp.MustCompile(`("(?:last_updated|last_update_attempt)": )"[^"]*"`)

// maskTimestamps replaces the times of a config dump with TIMESTAMP.
func maskTimestamps(s string) string { return timestampPattern.ReplaceAllString(s, `${1}"TIMESTAMP"`) }
