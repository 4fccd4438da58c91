// Command h1count counts the instructions the sidecar executes per proxied
// HTTP/1.1 request, with valgrind's callgrind: a figure that does not move
// with the machine's load, unlike requests/s, so that two commits can be
// compared on a shared machine. It starts the sidecar under callgrind
// with the peers script's configuration (one listener, one STATIC cluster,
// the router), an upstream answering 128 bytes (-body sets another size)
// and keep-alive clients in this process; it sends a warm-up, zeroes callgrind's counters, sends a
// fixed number of requests, dumps the counters and prints instructions
// per request. Go's signal preemption is turned off and GOMAXPROCS is 1 so
// that valgrind's thread serialisation adds no spinning; the sidecar's
// own garbage collector stays on (allocations are part of the cost), and
// the stats flush is set to 2 minutes so that it does not fall into the
// window.
//
// Two figures are printed per request: all instructions, and those of the
// code outside the Go runtime and the network poller (runtime.*,
// internal/poll, net, syscall). The second is the proxy's own work and
// moves by a few instructions from run to run. The first also counts the
// scheduler, which does more or less work as the requests of several
// connections arrive together or apart: under valgrind that follows the
// machine's load by a few percent.
//
//	h1count [-n 20000] [-reps 3] [-body 16384] bin/sidecar [/tmp/sidecar-old ...]
//
// With -h2c STREAMS, the clients speak h2c with prior knowledge through
// h2load (-conns connections, STREAMS concurrent streams on each, as the
// peers script's h2c runs), the upstream leg staying HTTP/1.1.
//
// With -tracing (a list such as off,1,100), each binary is also measured
// with the HTTP connection manager's tracing at each random_sampling
// percentage ("off": no tracing block), the spans exported by the
// OpenTelemetry tracer over OTLP/HTTP, with Envoy's default batching, to a
// collector in this process that reads each export and answers 200; only
// the sidecar's instructions are counted, as always.
//
// With -config (a list such as minimal,typical), each binary is also
// measured under each bootstrap: "minimal" is the peers configuration
// above; "typical" is what a sidecar usually carries on top of it: a file
// access log with Envoy's default format, a route table of 20 routes
// (prefix, path, regex and header matchers; the request matches the last
// one, a catch-all prefix "/", so that all 19 others are tried first), the
// health_check filter (pass_through_mode false, on /healthz) before the
// router, and stats with the default tag extractors plus a fixed tag.
//
// Several binaries are measured interleaved, reps times each, and the
// median is reported per binary. Every run is bounded in requests and
// time; only the processes it starts are stopped; every socket is on
// 127.0.0.1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	var (
		conns   = flag.Int("conns", 8, "keep-alive client connections")
		size    = flag.Int("body", 128, "bytes of the upstream's response body")
		warm    = flag.Int("warm", 2000, "warm-up requests, not counted")
		n       = flag.Int("n", 20000, "counted requests")
		reps    = flag.Int("reps", 1, "runs per binary (the median is reported)")
		keep    = flag.String("out", "", "keep callgrind's dump of each run as OUT.<binary index>.<run> (for callgrind_annotate)")
		timeout = flag.Duration("timeout", 20*time.Minute, "bound on the whole run")
		tracing = flag.String("tracing", "", "comma-separated tracing cases: off, or a random_sampling percentage")
		h2c     = flag.Int("h2c", 0, "streams per connection: the clients speak h2c (prior knowledge) through h2load instead of HTTP/1.1")
		configs = flag.String("config", "minimal", "comma-separated bootstraps: minimal (the peers configuration), typical (access log, 20 routes, health_check, stats tags)")
	)
	flag.Parse()
	bins := flag.Args()
	if len(bins) == 0 {
		bins = []string{"bin/sidecar"}
	}
	// cases are the configurations measured: each binary, under each
	// bootstrap and each tracing case.
	type testCase struct{ label, bin, config, tracing string }
	var cases []testCase
	for _, bin := range bins {
		for cfg := range strings.SplitSeq(*configs, ",") {
			if cfg != "minimal" && cfg != "typical" {
				fmt.Fprintf(os.Stderr, "h1count: -config: %q is neither minimal nor typical\n", cfg)
				os.Exit(2)
			}
			label := bin
			if *configs != "minimal" {
				label += " " + cfg
			}
			if *tracing == "" {
				cases = append(cases, testCase{label, bin, cfg, ""})
				continue
			}
			for t := range strings.SplitSeq(*tracing, ",") {
				if t != "off" {
					if _, err := strconv.ParseFloat(t, 64); err != nil {
						fmt.Fprintf(os.Stderr, "h1count: -tracing: %q is neither off nor a percentage\n", t)
						os.Exit(2)
					}
				}
				cases = append(cases, testCase{label + " tracing " + t, bin, cfg, t})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	perReq := make([][]uint64, len(cases))
	allReq := make([][]uint64, len(cases))
	for rep := range *reps {
		for i, tc := range cases {
			out := ""
			if *keep != "" {
				out = fmt.Sprintf("%s.%d.%d", *keep, i, rep)
			}
			load := func(addr string, n int) error { return load(addr, *conns, n) }
			if *h2c > 0 {
				load = func(addr string, n int) error { return loadH2c(ctx, addr, *conns, *h2c, n) }
			}
			c, err := run(ctx, tc.bin, tc.config, tc.tracing, out, upstreamResponse(*size), load, *warm, *n)
			if err != nil {
				fmt.Fprintln(os.Stderr, "h1count:", err)
				os.Exit(1)
			}
			all, own := c.all/uint64(*n), c.own/uint64(*n)
			perReq[i] = append(perReq[i], own)
			allReq[i] = append(allReq[i], all)
			fmt.Printf("%s: %d requests: %d instructions per request, %d outside the runtime and poller", tc.label, *n, all, own)
			if tc.tracing != "" && tc.tracing != "off" {
				fmt.Printf(" (%d exports)", c.exports)
			}
			fmt.Println()
		}
	}
	if *reps > 1 {
		for i, tc := range cases {
			fmt.Printf("%s: median %d instructions per request (%s), %d outside the runtime and poller (%s)\n",
				tc.label, median(allReq[i]), spread(allReq[i]), median(perReq[i]), spread(perReq[i]))
		}
	}
}

func median(v []uint64) uint64 {
	slices.Sort(v)
	return v[len(v)/2]
}

func spread(v []uint64) string {
	slices.Sort(v)
	return fmt.Sprintf("%d to %d", v[0], v[len(v)-1])
}

// counts are a run's instructions: all, and the proxy's own (outside the
// Go runtime and the network poller).
// A traced run also counts the exports the collector received meanwhile.
type counts struct{ all, own, exports uint64 }

const body = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func run(ctx context.Context, sidecar, config, tracing, keep string, response []byte, load func(addr string, n int) error, warm, n int) (counts, error) {
	dir, err := os.MkdirTemp("", "h1count")
	if err != nil {
		return counts{}, err
	}
	defer os.RemoveAll(dir)
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return counts{}, err
	}
	defer up.Close()
	go serve(up, response, nil)
	port, err := benchkit.FreePort()
	if err != nil {
		return counts{}, err
	}
	// exports counts the collector's requests, reported with a traced
	// run's figures to show the spans went out.
	var exports atomic.Int64
	bootstrap := benchkit.Bootstrap(port, "127.0.0.1", up.Addr().(*net.TCPAddr).Port)
	if config == "typical" {
		bootstrap = typical(bootstrap, filepath.Join(dir, "access.log"))
	}
	if tracing != "" && tracing != "off" {
		collector, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return counts{}, err
		}
		defer collector.Close()
		go serve(collector, collectorResponse, &exports)
		bootstrap = withTracing(bootstrap, tracing, collector.Addr().(*net.TCPAddr).Port)
	}
	cfg := filepath.Join(dir, "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte(bootstrap), 0o600); err != nil {
		return counts{}, err
	}
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.CommandContext(ctx, "valgrind", "--tool=callgrind", "--callgrind-out-file="+out,
		sidecar, "-c", cfg, "--concurrency", "1", "--log-level", "warning", "--disable-hot-restart")
	// cpu.rdtscp=off: valgrind 3.19 does not decode RDTSCP, which Go's
	// runtime executes on a contended lock (cputicks), and the sidecar
	// then dies of SIGILL; RDTSC behind fences is what it uses instead.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	if err := cmd.Start(); err != nil {
		return counts{}, err
	}
	// exited closes when the sidecar (valgrind) has ended.
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitPort(ctx, addr, exited); err != nil {
		stop()
		return counts{}, fmt.Errorf("%w; valgrind said: %s", err, stderr.String())
	}
	// The server gives its start-up memory back once it serves (a pass
	// over /proc/self/smaps, slow under valgrind): let that end before the
	// counted window rather than fall into it.
	time.Sleep(3 * time.Second)
	if err := load(addr, warm); err != nil {
		stop()
		return counts{}, err
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := exec.CommandContext(ctx, "callgrind_control", "-z", pid).Run(); err != nil {
		stop()
		return counts{}, fmt.Errorf("callgrind_control -z: %w", err)
	}
	exported := exports.Load()
	if err := load(addr, n); err != nil {
		stop()
		return counts{}, err
	}
	if err := exec.CommandContext(ctx, "callgrind_control", "-d", pid).Run(); err != nil {
		stop()
		return counts{}, fmt.Errorf("callgrind_control -d: %w", err)
	}
	exported = exports.Load() - exported
	if config == "typical" {
		// The access log shows that the typical configuration did its
		// work: a line per request, once the sidecar's flush timer has
		// written them (read before the stop, as callgrind sometimes
		// dies on the stop's signal before the last flush).
		if err := waitLines(ctx, filepath.Join(dir, "access.log"), warm+n); err != nil {
			stop()
			return counts{}, err
		}
	}
	stop()
	dumps, _ := filepath.Glob(out + ".*")
	if len(dumps) == 0 {
		return counts{}, errors.New("callgrind wrote no dump")
	}
	dump := dumps[0]
	c, err := summary(dump)
	c.exports = uint64(exported)
	if err == nil && keep != "" {
		err = os.Rename(dump, keep)
	}
	return c, err
}

// summary reads a callgrind dump: the total, and the self cost of the
// functions outside the runtime and the poller. Cost lines follow an
// "fn=" line; the line after "calls=" is a callee's inclusive cost, not
// the function's own, and is skipped. Names are compressed: "(id) name"
// the first time, in an "fn=" or a "cfn=" line, "(id)" after.
func summary(path string) (counts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return counts{}, err
	}
	var (
		c        counts
		total    bool
		names    = map[string]string{}
		own      bool
		skipNext bool
	)
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if skipNext {
			skipNext = false
			continue
		}
		switch {
		case strings.HasPrefix(line, "summary: "):
			v, err := strconv.ParseUint(strings.TrimSpace(line[len("summary: "):]), 10, 64)
			if err != nil {
				return counts{}, err
			}
			c.all, total = v, true
		case strings.HasPrefix(line, "fn="):
			id, name, _ := strings.Cut(line[len("fn="):], " ")
			if name != "" {
				names[id] = name
			}
			own = !runtimeFunc(names[id])
		case strings.HasPrefix(line, "cfn="):
			// A callee's name may be given first here.
			if id, name, _ := strings.Cut(line[len("cfn="):], " "); name != "" {
				names[id] = name
			}
		case strings.HasPrefix(line, "calls="):
			skipNext = true
		case own && line != "" && (line[0] >= '0' && line[0] <= '9' || line[0] == '+' || line[0] == '-' || line[0] == '*'):
			if f := strings.Fields(line); len(f) >= 2 {
				v, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil {
					return counts{}, fmt.Errorf("%s: %q: %w", path, line, err)
				}
				c.own += v
			}
		}
	}
	if !total {
		return counts{}, fmt.Errorf("%s has no summary line", path)
	}
	return c, nil
}

// runtimeFunc reports whether a function belongs to the Go runtime or the
// network poller, whose work follows the timing of the requests.
func runtimeFunc(name string) bool {
	for _, p := range []string{"runtime.", "internal/runtime/", "internal/poll.", "net.", "syscall.", "internal/syscall/"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "" || strings.HasPrefix(name, "0x")
}

// waitLines waits, up to 30 s, for the file at path to hold want lines.
func waitLines(ctx context.Context, path string, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		lines := bytes.Count(b, []byte("\n"))
		if lines == want {
			return nil
		}
		if lines > want || ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("the access log has %d lines for %d requests", lines, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPort waits for addr to accept connections, unless the process
// behind it ends first.
func waitPort(ctx context.Context, addr string, exited <-chan struct{}) error {
	for ctx.Err() == nil {
		select {
		case <-exited:
			return fmt.Errorf("the sidecar ended before %s opened", addr)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not open", addr)
}

// collectorResponse is the collector's answer: an empty 200, as an
// OTLP/HTTP collector's success may be.
var collectorResponse = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

// upstreamResponse is the upstream's answer, with a body of size bytes
// (128 by default; 16384 for the peers script's larger body), written in
// one write.
func upstreamResponse(size int) []byte {
	b := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", size)
	for size > 0 {
		n := min(size, len(body))
		b, size = append(b, body[:n]...), size-n
	}
	return b
}

// withTracing adds the HTTP connection manager's tracing at percent random
// sampling to the peers bootstrap, with the OpenTelemetry tracer exporting
// over OTLP/HTTP to a cluster of the collector at port.
func withTracing(bootstrap, percent string, port int) string {
	const anchor = "          codec_type: AUTO\n"
	tracing := anchor + fmt.Sprintf(`          tracing:
            random_sampling: {value: %s}
            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                http_service: {http_uri: {uri: "http://collector/v1/traces", cluster: otlp, timeout: 5s}}
`, percent)
	cluster := fmt.Sprintf(`  - name: otlp
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: otlp
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port)
	return strings.Replace(bootstrap, anchor, tracing, 1) + cluster
}

// serve answers every request on l's connections with response, counting
// them in count when it is not nil.
func serve(l net.Listener, response []byte, count *atomic.Int64) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			var (
				head []byte
				req  http1.Request
				b    http1.BodyReader
			)
			for {
				if head, err = http1.ReadHead(r, head, 64<<10); err != nil {
					return
				}
				if err := http1.ParseRequest(head, &req, http1.RequestOptions{MaxHeaders: 100}); err != nil {
					return
				}
				if req.ContentLength > 0 {
					b.Reset(r, http1.BodyLength, req.ContentLength, 0, nil)
					if !drainBody(&b) {
						return
					}
				}
				if count != nil {
					count.Add(1)
				}
				if _, err := c.Write(response); err != nil {
					return
				}
			}
		}()
	}
}

// load sends n requests over conns keep-alive connections, one at a time
// on each, and checks every answer.
func load(addr string, conns, n int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	per := n / conns
	for i := range conns {
		count := per
		if i == 0 {
			count += n - per*conns
		}
		wg.Go(func() {
			if err := client(addr, count); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func client(addr string, n int) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	req := []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: h1count\r\n\r\n")
	var (
		head []byte
		resp http1.Response
		b    http1.BodyReader
	)
	for range n {
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Write(req); err != nil {
			return err
		}
		if head, err = http1.ReadHead(r, head, 64<<10); err != nil {
			return err
		}
		if err := http1.ParseResponse(head, &resp, 100); err != nil {
			return err
		}
		if resp.Status != 200 {
			return fmt.Errorf("status %d", resp.Status)
		}
		b.Reset(r, resp.BodyKind(false), resp.ContentLength, 1024, nil)
		if !drainBody(&b) {
			return errors.New("response body broke off")
		}
	}
	return nil
}

func drainBody(b *http1.BodyReader) bool {
	for {
		_, err := b.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
