// Command idleconn measures what connections cost a proxy beside haproxy
// and nginx, on loopback (issue #19): the memory each idle keep-alive
// connection holds, HTTP/1.1 and h2c, after one request each, and the rate
// of new connections (connect, one request, close) with the proxy's CPU
// time per connection; and (-tests rss) the resident memory of the
// benchmark configuration at rest and after a bounded keep-alive load,
// split into anonymous and file pages. Each proxy runs with one worker
// (haproxy nbthread 1, nginx one worker, the sidecar --concurrency 1 and
// GOMAXPROCS=1) pinned to its own CPU, in front of the same upstream
// (nginx, one worker, a 128-byte file and a 16 KiB one); this program and
// the upstream should run on the other CPU (the Makefile's bench-idle and
// bench-rss targets pin them).
//
// Memory per connection is the growth of the proxy's resident memory
// (VmRSS, the master's and its workers' for nginx) over its idle baseline
// once the connections are open and idle, divided by their number; for a
// sidecar also the growth of its Go heap in use and of all the memory its
// runtime holds (heap, goroutine stacks), from its admin's /memory. Every
// memory figure comes from a fresh process. Every run is bounded in count
// and time; only the processes this program starts are stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	sidecar, baseline, haproxy, nginx, cpu, tests, heapDir string
	conns, parallel, newParallel, reps                     int
	maxNew                                                 int64
	newClose                                               bool
	dur, settle                                            time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.sidecar, "sidecar", "bin/sidecar", "the sidecar binary")
	flag.StringVar(&c.baseline, "baseline", "", "another sidecar binary, measured in the same run as \"outrigger-base\" (before/after comparisons)")
	flag.StringVar(&c.haproxy, "haproxy", "haproxy", "the haproxy binary (\"\": skip it)")
	flag.StringVar(&c.nginx, "nginx", "nginx", "the nginx binary (the upstream, and a proxy)")
	flag.StringVar(&c.cpu, "proxy-cpu", "0", "CPU the proxies are pinned to (\"\" for none)")
	flag.StringVar(&c.tests, "tests", "h1,h2c,newconn", "the tests to run, comma-separated (and rss: resident memory at rest and after a load)")
	flag.StringVar(&c.heapDir, "heapprofile", "", "a directory: write each sidecar's heap profile of its idle connections there (an extra run with every allocation sampled)")
	flag.IntVar(&c.conns, "conns", 5000, "idle connections held")
	flag.IntVar(&c.parallel, "parallel", 8, "connections opened at a time")
	flag.IntVar(&c.newParallel, "new-parallel", 16, "clients of the new-connection loop")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of the new-connection runs (the median is reported)")
	flag.Int64Var(&c.maxNew, "max-new", 200000, "at most this many connections per new-connection run")
	flag.BoolVar(&c.newClose, "new-close", false, "the new-connection clients' requests carry Connection: close")
	flag.DurationVar(&c.dur, "dur", 5*time.Second, "measured time per new-connection run, and per load phase of the rss test")
	flag.DurationVar(&c.settle, "settle", 2*time.Second, "wait before each memory reading")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "idleconn bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if err := raiseFileLimit(c.conns); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "idlebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// nginx's workers run as another user, who must read the files.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	up, err := startUpstream(c.nginx, dir)
	if err != nil {
		return err
	}
	defer stop(up)

	var kinds []kind
	if c.haproxy != "" {
		kinds = append(kinds, kind{"haproxy", c.haproxy, c.conns, startHAProxy})
	}
	kinds = append(kinds, kind{"nginx", c.nginx, c.conns, startNginx}, kind{"outrigger", c.sidecar, c.conns, startSidecar})
	if c.baseline != "" {
		kinds = append(kinds, kind{"outrigger-base", c.baseline, c.conns, startSidecar})
	}
	tests := strings.Split(c.tests, ",")
	fmt.Printf("idleconn: %d connections, %s, %d CPUs, load average %s\n\n", c.conns, time.Now().UTC().Format(time.RFC3339), nproc(), loadavg())
	for _, proto := range []string{"h1", "h2c"} {
		if !slices.Contains(tests, proto) {
			continue
		}
		fmt.Printf("| %s idle connections | RSS per connection | Go heap per connection | Go runtime memory per connection | RSS before |\n|---|---|---|---|---|\n", protoName(proto))
		for _, k := range kinds {
			r, err := idleMemory(c, k, proto, dir, up.h1, "")
			if err != nil {
				return fmt.Errorf("%s %s: %w", k.name, proto, err)
			}
			heap, phys := "", ""
			if r.goMem {
				heap, phys = kib(r.heap, c.conns), kib(r.physical, c.conns)
			}
			fmt.Printf("| %s | %s | %s | %s | %.1f MiB |\n", k.name, kib(r.rss, c.conns), heap, phys, float64(r.rssBefore)/(1<<20))
		}
		fmt.Println()
		if c.heapDir != "" {
			for _, k := range kinds {
				if !strings.HasPrefix(k.name, "outrigger") {
					continue
				}
				out, err := filepath.Abs(filepath.Join(c.heapDir, k.name+"-"+proto+".heap"))
				if err != nil {
					return err
				}
				if _, err := idleMemory(c, k, proto, dir, up.h1, out); err != nil {
					return fmt.Errorf("%s %s heap profile: %w", k.name, proto, err)
				}
				fmt.Printf("heap profile of %s's %s idle connections: %s\n", k.name, protoName(proto), out)
			}
			fmt.Println()
		}
	}
	if slices.Contains(tests, "rss") {
		if err := residentMemory(c, kinds, dir, up.h1); err != nil {
			return err
		}
	}
	if slices.Contains(tests, "newconn") {
		if err := newConnRates(c, kinds, dir, up.h1); err != nil {
			return err
		}
	}
	fmt.Printf("load average after: %s\n", loadavg())
	return nil
}

// idle is one idle-memory reading, growths in bytes.
type idle struct {
	rssBefore, rss int64
	goMem          bool
	heap, physical int64
}

// idleMemory starts a fresh k, warms it with a few connections, reads its
// memory, opens c.conns connections of proto with one request each, lets
// them settle idle and reads its memory again. With heapOut, a sidecar's
// heap profiler records while the connections open, and its profile is
// copied to heapOut.
func idleMemory(c config, k kind, proto, dir string, up int, heapOut string) (idle, error) {
	p, err := k.start(k, c.cpu, dir, up)
	if err != nil {
		return idle{}, err
	}
	defer stop(p)
	port, open := p.h1, openH1
	if proto == "h2c" {
		port, open = p.h2c, openH2C
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	warm, err := openIdle(addr, 2*c.parallel, c.parallel, open)
	if err != nil {
		return idle{}, fmt.Errorf("warm-up: %w", err)
	}
	closeAll(warm)
	time.Sleep(c.settle)
	var r idle
	r.rssBefore = benchkitRSS(p)
	var m0 goMemory
	if p.admin != "" {
		if m0, err = p.memory(); err != nil {
			return idle{}, err
		}
		r.goMem = true
		if heapOut != "" {
			if err := p.adminPost("/heapprofiler?enable=y"); err != nil {
				return idle{}, err
			}
		}
	}
	conns, err := openIdle(addr, c.conns, c.parallel, open)
	if err != nil {
		return idle{}, err
	}
	defer closeAll(conns)
	time.Sleep(c.settle)
	r.rss = benchkitRSS(p) - r.rssBefore
	if p.admin != "" {
		m1, err := p.memory()
		if err != nil {
			return idle{}, err
		}
		r.heap, r.physical = m1.heap-m0.heap, m1.physical-m0.physical
		if heapOut != "" {
			if err := p.adminPost("/heapprofiler?enable=n"); err != nil {
				return idle{}, err
			}
			b, err := os.ReadFile(filepath.Join(dir, k.name+".heap"))
			if err != nil {
				return idle{}, err
			}
			if err := os.WriteFile(heapOut, b, 0o644); err != nil {
				return idle{}, err
			}
		}
	}
	return r, nil
}

// newConnRates runs the new-connection loop against each proxy in turn,
// c.reps times, and prints the medians.
func newConnRates(c config, kinds []kind, dir string, up int) error {
	var ps []*proxy
	defer func() {
		for _, p := range ps {
			stop(p)
		}
	}()
	for _, k := range kinds {
		p, err := k.start(k, c.cpu, dir, up)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	type run struct{ rate, cpuUs float64 }
	runs := map[string][]run{}
	failures := map[string]int64{}
	for range c.reps {
		for _, p := range ps { // in turns, so that drift hits all
			addr := "127.0.0.1:" + strconv.Itoa(p.h1)
			// A second of warm-up, then the measured run.
			var done, failed atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			newConns(ctx, addr, c.newParallel, c.maxNew, c.newClose, &done, &failed)
			cancel()
			done.Store(0)
			c0, t0 := benchkitCPU(p), time.Now()
			ctx, cancel = context.WithTimeout(context.Background(), c.dur)
			newConns(ctx, addr, c.newParallel, c.maxNew, c.newClose, &done, &failed)
			cancel()
			c1, t1 := benchkitCPU(p), time.Now()
			n := float64(done.Load())
			r := run{rate: n / t1.Sub(t0).Seconds()}
			if n > 0 {
				r.cpuUs = float64((c1 - c0).Microseconds()) / n
			}
			runs[p.name] = append(runs[p.name], r)
			failures[p.name] += failed.Load()
		}
	}
	best := 0.0
	for _, p := range ps {
		if !strings.HasPrefix(p.name, "outrigger") {
			rates := make([]float64, 0, c.reps)
			for _, r := range runs[p.name] {
				rates = append(rates, r.rate)
			}
			best = max(best, median(rates))
		}
	}
	what := "connect, one request, close"
	if c.newClose {
		what = "connect, one request with Connection: close, close"
	}
	fmt.Printf("| new connections (%s; %d clients) | connections/s (median of %d) | spread | proxy CPU µs per connection | rate ÷ best peer | failed |\n|---|---|---|---|---|---|\n", what, c.newParallel, c.reps)
	for _, p := range ps {
		var rates, cpus []float64
		for _, r := range runs[p.name] {
			rates, cpus = append(rates, r.rate), append(cpus, r.cpuUs)
		}
		m := median(rates)
		ratio := ""
		if best > 0 {
			ratio = fmt.Sprintf("%.2f×", m/best)
		}
		fmt.Printf("| %s | %.0f | %.0f–%.0f | %.1f | %s | %d |\n", p.name, m, slices.Min(rates), slices.Max(rates), median(cpus), ratio, failures[p.name])
	}
	fmt.Println()
	return nil
}

// median is the middle value of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// kib renders bytes per connection in KiB.
func kib(b int64, n int) string { return fmt.Sprintf("%.2f KiB", float64(b)/float64(n)/1024) }

// protoName is a test's protocol as the tables name it.
func protoName(proto string) string {
	if proto == "h2c" {
		return "h2c"
	}
	return "HTTP/1.1"
}

// raiseFileLimit lifts this process's open-file limit (which the proxies
// inherit) to its hard limit, and fails when that is too low for the
// connections held: each is a descriptor here and one in the proxy, which haproxy
// counts twice.
func raiseFileLimit(conns int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if need := 2*uint64(conns) + 3000; l.Cur < need {
		return fmt.Errorf("the open-file limit is %d; %d connections need %d (raise ulimit -n)", l.Cur, conns, need)
	}
	return nil
}

// nproc is the number of CPUs this program may run on.
func nproc() int {
	out, err := exec.Command("nproc", "--all").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// loadavg is the machine's load average (1, 5, 15 minutes).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
