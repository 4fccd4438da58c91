package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sidecar is one running sidecar and its admin.
type sidecar struct {
	cmd   *exec.Cmd
	admin string // http://host:port
	dir   string
	hc    *http.Client
}

// bootstrap is the sidecar's configuration: the ADS server on xdsPort
// through the static HTTP/2 cluster "xds", clusters and listeners over
// ADS, the admin on any free port with its profiles in dir.
func bootstrap(xdsPort int, dir string) string {
	return fmt.Sprintf(`node: {id: %s, cluster: bench}
stats_flush_interval: 120s
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
  profile_path: %s
static_resources:
  clusters:
  - name: xds
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: xds
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    set_node_on_first_message_only: true
    grpc_services: [{envoy_grpc: {cluster_name: xds}}]
  cds_config: {ads: {}, resource_api_version: V3}
  lds_config: {ads: {}, resource_api_version: V3}
`, nodeID, filepath.Join(dir, "sidecar.prof"), xdsPort)
}

// launch starts the sidecar with GOMAXPROCS procs against the management
// server on xdsPort and waits for its admin (not for readiness).
func launch(bin string, procs, xdsPort int) (*sidecar, error) {
	dir, err := os.MkdirTemp("", "xds-bench")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(cfg, []byte(bootstrap(xdsPort, dir)), 0o600); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "admin.addr")
	cmd := exec.Command(bin, "-c", cfg, "--disable-hot-restart", "-l", "error", "--drain-time-s", "1",
		"--admin-address-path", addrFile)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &sidecar{cmd: cmd, dir: dir, hc: &http.Client{Timeout: 30 * time.Second}}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			s.admin = "http://" + strings.TrimSpace(string(b))
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("the sidecar's admin did not come up within 20s")
}

// stop ends the sidecar (SIGINT, then SIGKILL after 10 s) and removes its
// directory.
func (s *sidecar) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.dir)
}

// do sends an admin request of method to path and returns the answer's
// status and body.
func (s *sidecar) do(method, path string) (int, string, error) {
	req, err := http.NewRequest(method, s.admin+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// stats reads the used stats whose names match the regular expression
// (usedonly walks only the stats in use, not every cluster's).
func (s *sidecar) stats(filter string) (map[string]string, error) {
	req, err := http.NewRequest(http.MethodGet, s.admin+"/stats?usedonly&filter="+url.QueryEscape(filter), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/stats: %s", resp.Status)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}

// stat reads one used stat as a number (0 when it is not used yet).
func (s *sidecar) stat(name string) (int, error) {
	m, err := s.stats("^" + strings.ReplaceAll(name, ".", `\.`) + "$")
	if err != nil {
		return 0, err
	}
	v, ok := m[name]
	if !ok {
		return 0, nil
	}
	return strconv.Atoi(v)
}

// waitFor polls cond every interval until it holds or bound passes; it
// returns when cond first held.
func waitFor(bound, interval time.Duration, cond func() (bool, error)) (time.Time, error) {
	return waitScaled(bound, interval, 0, cond)
}

// waitScaled is waitFor with the interval growing to a share of the time
// waited so far (share 0.05: within 5% of the figure), so that a long wait
// polls, and loads the sidecar, a few dozen times rather than hundreds.
func waitScaled(bound, interval time.Duration, share float64, cond func() (bool, error)) (time.Time, error) {
	start := time.Now()
	deadline := start.Add(bound)
	for {
		ok, err := cond()
		if err != nil {
			return time.Time{}, err
		}
		if ok {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not reached within %s", bound)
		}
		time.Sleep(max(interval, time.Duration(share*float64(time.Since(start)))))
	}
}

// waitReady waits until /ready answers 200.
func (s *sidecar) waitReady(bound time.Duration) error {
	_, err := waitFor(bound, 10*time.Millisecond, func() (bool, error) {
		code, _, err := s.do(http.MethodGet, "/ready")
		return code == http.StatusOK, err
	})
	return err
}

// profiler starts or stops the sidecar's CPU or heap profiler (kind
// "cpu" or "heap"); its profile goes to the sidecar's directory.
func (s *sidecar) profiler(kind string, on bool) error {
	q := "n"
	if on {
		q = "y"
	}
	code, body, err := s.do(http.MethodPost, "/"+kind+"profiler?enable="+q)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("/%sprofiler?enable=%s: %d %s", kind, q, code, body)
	}
	return nil
}

// cpuProfiled runs fn under the sidecar's CPU profiler when dir is set,
// and keeps the profile as dir/name.cpu.pprof.
func (s *sidecar) cpuProfiled(dir, name string, fn func() error) error {
	if dir == "" {
		return fn()
	}
	if err := s.profiler("cpu", true); err != nil {
		return err
	}
	err := fn()
	if perr := s.profiler("cpu", false); perr != nil {
		return errors.Join(err, perr)
	}
	return errors.Join(err, s.keepProfile(filepath.Join(dir, name+".cpu.pprof")))
}

// keepProfile copies the last profile written to path.
func (s *sidecar) keepProfile(path string) error {
	b, err := os.ReadFile(filepath.Join(s.dir, "sidecar.prof"))
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// liveHeap is the sidecar's /memory right after a collection: the heap
// profiler's stop runs one before it writes its profile (the profile
// itself is left in the sidecar's directory). allocated is the heap in
// use, heapSize what the heap holds from the system.
func (s *sidecar) liveHeap() (allocated, heapSize uint64, err error) {
	for _, on := range []bool{true, false} {
		if err := s.profiler("heap", on); err != nil {
			return 0, 0, err
		}
	}
	_, body, err := s.do(http.MethodGet, "/memory")
	if err != nil {
		return 0, 0, err
	}
	var m struct {
		Allocated string `json:"allocated"`
		HeapSize  string `json:"heap_size"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return 0, 0, fmt.Errorf("/memory: %w", err)
	}
	allocated, err1 := strconv.ParseUint(m.Allocated, 10, 64)
	heapSize, err2 := strconv.ParseUint(m.HeapSize, 10, 64)
	return allocated, heapSize, errors.Join(err1, err2)
}

// cpuTime is the CPU time the sidecar has used: the time on a CPU of each
// of its threads, in nanoseconds, from /proc/PID/task/*/schedstat (the
// threads that ended are left out: the Go runtime keeps its threads).
func (s *sidecar) cpuTime() (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", s.cmd.Process.Pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no threads in /proc: %v", err)
	}
	var total time.Duration
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, errors.New("short schedstat")
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// cpuTotal adds up the sidecar's CPU time over several updates.
type cpuTotal struct {
	used    time.Duration
	updates int
	// polls counts the admin polls made meanwhile, when the caller
	// counts them, for lessPolls.
	polls int
}

// measure runs fn and adds the sidecar's CPU time meanwhile as one update.
func (c *cpuTotal) measure(s *sidecar, fn func() error) error {
	before, err := s.cpuTime()
	if err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	after, err := s.cpuTime()
	if err != nil {
		return err
	}
	c.used += after - before
	c.updates++
	return nil
}

// String is the mean per update.
func (c cpuTotal) String() string {
	if c.updates == 0 {
		return "-"
	}
	return fmt.Sprintf("%s per update (mean of %d)", round(c.used/time.Duration(c.updates)), c.updates)
}

// lessPolls is the mean per update less the polls' estimated cost (per
// poll).
func (c cpuTotal) lessPolls(per time.Duration) string {
	if c.updates == 0 {
		return "-"
	}
	return fmt.Sprintf("%s per update (%d polls)", round((c.used-time.Duration(c.polls)*per)/time.Duration(c.updates)), c.polls)
}

// pollCost is the sidecar's CPU time per /stats read, over n reads of the
// stats matching filter.
func (s *sidecar) pollCost(filter string, n int) (time.Duration, error) {
	var c cpuTotal
	err := c.measure(s, func() error {
		for range n {
			if _, err := s.stats(filter); err != nil {
				return err
			}
		}
		return nil
	})
	return c.used / time.Duration(n), err
}
