// Command hcload measures what active health checking costs the sidecar:
// a STATIC cluster of 1,000 loopback HTTP hosts (one upstream in this
// program listening on 1,000 ports) checked every second, beside a
// control sidecar with the same cluster and no health checks. It reads
// each sidecar's CPU time (user + system, from /proc/<pid>/stat) over a
// bounded window once it is LIVE, and prints the share of one core each
// used, medians of the repetitions, and the checks made. Everything runs
// on 127.0.0.1; every run is bounded in time; only the processes it
// starts are stopped.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTicks = 100

func main() {
	var (
		sidecar = flag.String("sidecar", "bin/sidecar", "the sidecar binary")
		dur     = flag.Duration("dur", 20*time.Second, "measured window per run")
		reps    = flag.Int("reps", 3, "repetitions of each configuration (medians are reported)")
		hosts   = flag.Int("hosts", 1000, "hosts in the cluster")
		profile = flag.String("profile", "", "write the health-checking sidecar's CPU profile of the last window to this file")
	)
	flag.Parse()
	if *hosts < 1 || *hosts > 5000 || *dur <= 0 || *dur > 10*time.Minute || *reps < 1 || *reps > 20 {
		fmt.Fprintln(os.Stderr, "hcload bench: -hosts 1..5000, -dur up to 10m, -reps 1..20")
		os.Exit(1)
	}
	if err := run(*sidecar, *dur, *reps, *hosts, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "hcload bench:", err)
		os.Exit(1)
	}
}

func run(sidecar string, dur time.Duration, reps, n int, profile string) error {
	ports, stop, err := serve(n)
	if err != nil {
		return err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "hcload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var control, checked, attempts []float64
	for i := 0; i < reps; i++ {
		for _, hc := range []bool{false, true} {
			prof := ""
			if hc {
				prof = profile
			}
			cpu, att, err := measure(sidecar, dir, ports, hc, dur, prof)
			if err != nil {
				return err
			}
			if hc {
				checked = append(checked, cpu)
				attempts = append(attempts, att)
			} else {
				control = append(control, cpu)
			}
			fmt.Printf("run %d health checks=%v: %.2f%% of one core, %.0f checks\n", i+1, hc, cpu, att)
		}
	}
	c, h := median(control), median(checked)
	fmt.Printf("\n%d hosts checked every 1 s, %v windows, medians of %d:\n", n, dur, reps)
	fmt.Printf("  control (no health checks): %.2f%% of one core\n", c)
	fmt.Printf("  health checks:              %.2f%% of one core (%.0f checks per window, %.0f/s)\n", h, median(attempts), median(attempts)/dur.Seconds())
	fmt.Printf("  cost of the checks:         %.2f%% of one core\n", h-c)
	return nil
}

// serve starts one HTTP upstream on n loopback ports; it answers 200.
func serve(n int) ([]int, func(), error) {
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	var lns []net.Listener
	stop := func() {
		_ = srv.Close()
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			stop()
			return nil, nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		go func() { _ = srv.Serve(ln) }()
	}
	return ports, stop, nil
}

// measure runs one sidecar and returns its CPU use over the window, as a
// percentage of one core, and the health checks it made meanwhile.
func measure(sidecar, dir string, ports []int, hc bool, dur time.Duration, profile string) (float64, float64, error) {
	admin, err := benchkit.FreePort()
	if err != nil {
		return 0, 0, err
	}
	path := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(path, []byte(bootstrap(admin, ports, hc, profile)), 0o644); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(sidecar, "-c", path, "--concurrency", "1", "--log-level", "error", "--disable-hot-restart")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	adminURL := fmt.Sprintf("http://127.0.0.1:%d", admin)
	if err := waitReady(adminURL, 60*time.Second); err != nil {
		return 0, 0, err
	}
	// Past the first round and its connections.
	time.Sleep(3 * time.Second)
	t0, err := cpuTicks(cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	a0, _ := benchkit.Counter(adminURL, "cluster.svc.health_check.attempt")
	if profile != "" {
		if err := post(adminURL + "/cpuprofiler?enable=y"); err != nil {
			return 0, 0, err
		}
	}
	start := time.Now()
	time.Sleep(dur)
	if profile != "" {
		if err := post(adminURL + "/cpuprofiler?enable=n"); err != nil {
			return 0, 0, err
		}
	}
	t1, err := cpuTicks(cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(start)
	a1, _ := benchkit.Counter(adminURL, "cluster.svc.health_check.attempt")
	cpu := float64(t1-t0) / clockTicks / elapsed.Seconds() * 100
	return cpu, float64(a1 - a0), nil
}

// bootstrap is one STATIC cluster of the ports, with an HTTP health check
// every second (no_traffic_interval too: the cluster takes no traffic)
// when hc, spread over the first second by initial_jitter.
func bootstrap(admin int, ports []int, hc bool, profile string) string {
	var eps strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&eps, "        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}\n", p)
	}
	checks := ""
	if hc {
		checks = `    health_checks:
    - {timeout: 1s, interval: 1s, no_traffic_interval: 1s, initial_jitter: 1s, unhealthy_threshold: 2, healthy_threshold: 2, http_health_check: {path: /healthz}}
`
	}
	prof := ""
	if profile != "" {
		prof = "\n  profile_path: " + profile
	}
	return fmt.Sprintf(`admin:
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}%s
static_resources:
  clusters:
  - name: svc
    connect_timeout: 1s
%s    load_assignment:
      cluster_name: svc
      endpoints:
      - lb_endpoints:
%s`, admin, prof, checks, eps.String())
}

// waitReady waits for /ready to answer 200 (LIVE: the first round of
// checks is over).
func waitReady(adminURL string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if r, err := http.Get(adminURL + "/ready"); err == nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the sidecar did not go LIVE in time")
}

// post sends a POST to the admin.
func post(url string) error {
	r, err := http.Post(url, "", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d", url, r.StatusCode)
	}
	return nil
}

// cpuTicks reads a process's user + system time, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return utime + stime, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
