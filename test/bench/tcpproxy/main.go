// Command tcpproxy measures the sidecar's tcp_proxy beside haproxy in TCP
// mode, in one run, on loopback: small messages (request and echo over
// many connections, closed loop) and bulk transfers (a few connections
// streaming 64 KiB writes, upload and download). Each proxy runs pinned to
// its own CPU with one worker; this program (the clients and the
// upstream) should run on the other CPU (the Makefile's bench-tcpproxy
// target pins it). It prints, per test and proxy, the rate, the proxy's
// CPU time per operation and the ratio to haproxy, medians of the
// repetitions. Every run is bounded in time; only the processes it starts
// are stopped.
package main

import (
	"bytes"
	"context"
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	var (
		sidecar  = flag.String("sidecar", "bin/sidecar", "the sidecar binary")
		baseline = flag.String("baseline", "", "another sidecar binary, measured in the same run as \"outrigger-base\" (before/after comparisons)")
		haproxy  = flag.String("haproxy", "haproxy", "the haproxy binary")
		dur      = flag.Duration("dur", 5*time.Second, "measured time per run")
		reps     = flag.Int("reps", 3, "repetitions (the median is reported)")
		conns    = flag.Int("conns", 32, "connections of the small-message test")
		msgSize  = flag.Int("msg", 128, "bytes per small message")
		bulkConn = flag.Int("bulk-conns", 4, "connections of the bulk tests")
		cpu      = flag.String("proxy-cpu", "0", "CPU the proxies are pinned to (\"\" for none)")
		only     = flag.String("tests", "small,upload,download", "the tests to run, comma-separated")
		profile  = flag.String("cpuprofile", "", "write a CPU profile of the sidecar's runs here (through its admin /cpuprofiler)")
	)
	flag.Parse()
	if err := run(*sidecar, *baseline, *haproxy, *cpu, *only, *profile, *dur, *reps, *conns, *msgSize, *bulkConn); err != nil {
		fmt.Fprintln(os.Stderr, "tcpproxy bench:", err)
		os.Exit(1)
	}
}

// upstreams are the servers behind the proxies: an echo server, a sink
// that discards, a source that sends without end.
type upstreams struct{ echo, sink, source int }

func startUpstreams() (upstreams, error) {
	var u upstreams
	serve := func(port *int, handle func(net.Conn)) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		*port = ln.Addr().(*net.TCPAddr).Port
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); handle(c) }()
			}
		}()
		return nil
	}
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	err := errors.Join(
		serve(&u.echo, func(c net.Conn) { _, _ = io.Copy(c, c) }),
		serve(&u.sink, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }),
		serve(&u.source, func(c net.Conn) {
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}),
	)
	return u, err
}

// proxy is one system under test: its ports per test and its process.
type proxy struct {
	name  string
	ports upstreams // the proxy's own ports, one per upstream
	admin int       // the sidecar's admin port
	cmd   *exec.Cmd
}

// adminPost posts to the sidecar's admin interface.
func (p *proxy) adminPost(path string) error {
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", p.admin, path), "text/plain", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return nil
}

// freePorts returns n loopback ports free a moment ago.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	return out, nil
}

func startHAProxy(bin, cpu, dir string, up upstreams) (*proxy, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	p := &proxy{name: "haproxy", ports: upstreams{ports[0], ports[1], ports[2]}}
	var b strings.Builder
	b.WriteString("global\n  nbthread 1\n  maxconn 4000\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n")
	for i, pair := range [][2]int{{p.ports.echo, up.echo}, {p.ports.sink, up.sink}, {p.ports.source, up.source}} {
		fmt.Fprintf(&b, "listen t%d\n  bind 127.0.0.1:%d\n  server s 127.0.0.1:%d\n", i, pair[0], pair[1])
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	p.cmd = pinned(cpu, bin, "-db", "-f", cfg)
	return p, start(p)
}

func startSidecar(name, bin, cpu, dir, profile string, up upstreams) (*proxy, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	p := &proxy{name: name, ports: upstreams{ports[0], ports[1], ports[2]}, admin: ports[3]}
	var b strings.Builder
	fmt.Fprintf(&b, "admin: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}, profile_path: %q}\nstatic_resources:\n  clusters:\n", p.admin, profile)
	names := []string{"echo", "sink", "source"}
	ups := []int{up.echo, up.sink, up.source}
	for i, n := range names {
		fmt.Fprintf(&b, "  - {name: %s, connect_timeout: 5s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}\n", n, n, ups[i])
	}
	b.WriteString("  listeners:\n")
	for i, n := range names {
		fmt.Fprintf(&b, `  - name: %s
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: %s, cluster: %s}
`, n, ports[i], n, n)
	}
	cfg := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	p.cmd = pinned(cpu, bin, "-c", cfg, "--concurrency", "1", "--log-level", "warning")
	p.cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return p, start(p)
}

// pinned is a command run on cpu (through taskset), or as is.
func pinned(cpu, bin string, args ...string) *exec.Cmd {
	if cpu == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpu, bin}, args...)...)
}

// start starts p and waits (10s at most) until it echoes through.
func start(p *proxy) error {
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, os.Stderr
	if err := p.cmd.Start(); err != nil {
		return err
	}
	for range 200 {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.ports.echo), time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, werr := c.Write([]byte("ping"))
			buf := make([]byte, 4)
			_, rerr := io.ReadFull(c, buf)
			_ = c.Close()
			if werr == nil && rerr == nil {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(p)
	return fmt.Errorf("%s did not come up", p.name)
}

// stop ends a process this program started.
func stop(p *proxy) { benchkit.Stop(p.cmd) }

// cpuTime is the CPU time a process has used (user + system).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}

// result is one measured run.
type result struct {
	ops   float64 // operations (messages or bytes) per second
	cpuUs float64 // proxy CPU microseconds per operation (per MB for bulk)
}

// measure runs load against p for dur after a second's warm-up; load
// returns its operation count so far.
func measure(p *proxy, dur time.Duration, perOp float64, load func(ctx context.Context, ops *atomic.Int64)) result {
	var ops atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), dur+time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { load(ctx, &ops); close(done) }()
	time.Sleep(time.Second)
	c0, _ := cpuTime(p.cmd.Process.Pid)
	n0, t0 := ops.Load(), time.Now()
	time.Sleep(dur)
	c1, _ := cpuTime(p.cmd.Process.Pid)
	n1, t1 := ops.Load(), time.Now()
	cancel()
	<-done
	n := float64(n1 - n0)
	r := result{ops: n / t1.Sub(t0).Seconds()}
	if n > 0 {
		r.cpuUs = float64((c1 - c0).Microseconds()) / (n / perOp)
	}
	return r
}

// small: conns connections each sending a message and reading its echo.
func small(port, conns, size int) func(ctx context.Context, ops *atomic.Int64) {
	return func(ctx context.Context, ops *atomic.Int64) {
		var wg sync.WaitGroup
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					return
				}
				defer c.Close()
				go func() { <-ctx.Done(); _ = c.Close() }()
				msg, buf := bytes.Repeat([]byte{'m'}, size), make([]byte, size)
				for ctx.Err() == nil {
					if _, err := c.Write(msg); err != nil {
						return
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					ops.Add(1)
				}
			}()
		}
		wg.Wait()
	}
}

// bulk: conns connections streaming 64 KiB writes (up) or reads (down);
// operations are bytes.
func bulk(port, conns int, up bool) func(ctx context.Context, ops *atomic.Int64) {
	return func(ctx context.Context, ops *atomic.Int64) {
		var wg sync.WaitGroup
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					return
				}
				defer c.Close()
				go func() { <-ctx.Done(); _ = c.Close() }()
				buf := make([]byte, 64<<10)
				for ctx.Err() == nil {
					var n int
					if up {
						n, err = c.Write(buf)
					} else {
						n, err = c.Read(buf)
					}
					ops.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

func run(sidecar, baseline, haproxy, cpu, only, profile string, dur time.Duration, reps, conns, msgSize, bulkConns int) error {
	up, err := startUpstreams()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tcpbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	hp, err := startHAProxy(haproxy, cpu, dir, up)
	if err != nil {
		return err
	}
	defer stop(hp)
	if profile == "" {
		profile = filepath.Join(dir, "cpu.prof")
	} else if profile, err = filepath.Abs(profile); err != nil {
		return err
	}
	sc, err := startSidecar("outrigger", sidecar, cpu, dir, profile, up)
	if err != nil {
		return err
	}
	defer stop(sc)
	if profile != filepath.Join(dir, "cpu.prof") {
		if err := sc.adminPost("/cpuprofiler?enable=y"); err != nil {
			return err
		}
		defer func() { _ = sc.adminPost("/cpuprofiler?enable=n") }()
	}

	type test struct {
		key   string // for -tests
		name  string
		unit  string
		perOp float64 // operations per reported CPU unit
		load  func(p *proxy) func(ctx context.Context, ops *atomic.Int64)
	}
	tests := []test{
		{"small", fmt.Sprintf("small messages (%d B, %d connections)", msgSize, conns), "msg/s", 1, func(p *proxy) func(context.Context, *atomic.Int64) {
			return small(p.ports.echo, conns, msgSize)
		}},
		{"upload", fmt.Sprintf("bulk upload (%d connections)", bulkConns), "MB/s", 1e6, func(p *proxy) func(context.Context, *atomic.Int64) {
			return bulk(p.ports.sink, bulkConns, true)
		}},
		{"download", fmt.Sprintf("bulk download (%d connections)", bulkConns), "MB/s", 1e6, func(p *proxy) func(context.Context, *atomic.Int64) {
			return bulk(p.ports.source, bulkConns, false)
		}},
	}
	proxies := []*proxy{hp, sc}
	if baseline != "" {
		base, err := startSidecar("outrigger-base", baseline, cpu, dir, filepath.Join(dir, "base.prof"), up)
		if err != nil {
			return err
		}
		defer stop(base)
		proxies = append(proxies, base)
	}
	fmt.Printf("| test | proxy | rate | proxy CPU µs per op | rate ÷ haproxy | CPU ÷ haproxy |\n|---|---|---|---|---|---|\n")
	for _, t := range tests {
		if !slices.Contains(strings.Split(only, ","), t.key) {
			continue
		}
		runs := map[string][]result{}
		for range reps {
			for _, p := range proxies { // alternate, so drift hits both
				runs[p.name] = append(runs[p.name], measure(p, dur, t.perOp, t.load(p)))
			}
		}
		base := median(runs["haproxy"])
		for _, p := range proxies {
			m := median(runs[p.name])
			rate, unit := m.ops, t.unit
			if unit == "MB/s" {
				rate /= 1e6
			}
			cpuUnit := "msg"
			if t.perOp != 1 {
				cpuUnit = "MB"
			}
			fmt.Printf("| %s | %s | %.0f %s | %.2f per %s | %.2f× | %.2f× |\n", t.name, p.name, rate, unit, m.cpuUs, cpuUnit, m.ops/base.ops, m.cpuUs/base.cpuUs)
		}
	}
	return nil
}

// median returns the run with the median rate, and the median CPU figure.
func median(rs []result) result {
	ops := make([]float64, len(rs))
	cpu := make([]float64, len(rs))
	for i, r := range rs {
		ops[i], cpu[i] = r.ops, r.cpuUs
	}
	slices.Sort(ops)
	slices.Sort(cpu)
	return result{ops: ops[len(ops)/2], cpuUs: cpu[len(cpu)/2]}
}
