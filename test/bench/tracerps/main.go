// Command tracerps measures what issue #12 states about tracing: the
// requests/s the sidecar serves with the HTTP connection manager's tracing
// off, at 1% and at 100% random sampling (OpenTelemetry over OTLP/HTTP with
// Envoy's default batching), as ratios to tracing off.
//
// One sidecar per case (--concurrency 1, GOMAXPROCS=1), each started once,
// proxies GET requests to an upstream answering 128 bytes; the traced ones
// export to an OTLP receiver that reads each export and answers an empty
// 200, discarding the spans. wrk (the peers script's load generator, one
// thread, -conns keep-alive connections) loads one sidecar at a time for
// -dur: a closed loop, bounded in connections and time. The cases are
// alternated, -rounds times, the order rotating from round to round so that
// no case always follows the same one. With -cpus (default "0,1", when the
// machine has two CPUs or more) the sidecars run on the first CPU and wrk,
// the upstream and the receiver on the second, as in the peers script.
//
// Each round prints every case's requests/s and the sidecar's CPU time per
// request (from /proc, its own process only) and busy share (its CPU time
// over the run's wall time: below 100%, the sidecar was not the only
// limit, because the machine's other work took its CPU or wrk's), then
// the ratios to tracing off of that round: the machine is shared, so the spread of the ratios
// across rounds is the noise. The end prints the medians of the ratios.
// The receiver is a process of its own; its CPU time is reported as a
// share of the sidecar's during the same run, so that what the sidecar's
// exports cost the machine outside the sidecar shows, and the spans
// exported (the sidecar's spans_sent) are checked against the requests.
//
//	go run ./test/bench/tracerps [-rounds 3] [-dur 5s] [-conns 16] [-cases off,1,100] bin/sidecar [OTHER_SIDECAR]
//
// A second binary is measured in the same alternation (its own three
// sidecars), with its ratios to its own tracing off. Only the processes it
// starts are stopped; every socket is on 127.0.0.1.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	var (
		serve   = flag.String("serve", "", "internal: run as the upstream (\"upstream\") or the OTLP receiver (\"receiver\") on -port")
		port    = flag.Int("port", 0, "internal: the port -serve listens on")
		rounds  = flag.Int("rounds", 3, "alternation rounds (each case once per round)")
		dur     = flag.Duration("dur", 5*time.Second, "wrk's duration per case and round")
		warm    = flag.Duration("warm", 2*time.Second, "wrk's warm-up per sidecar, before the first round")
		conns   = flag.Int("conns", 16, "wrk's keep-alive connections")
		list    = flag.String("cases", "off,1,100", "comma-separated cases: off, or a random_sampling percentage")
		minSpan = flag.Int("min-flush-spans", 0, "the runtime key tracing.opentelemetry.min_flush_spans (0: unset, Envoy's default of 5)")
		cpus    = flag.String("cpus", defaultCPUs(), "SIDECAR_CPU,LOAD_CPU for taskset (empty: no pinning)")
	)
	flag.Parse()
	if *serve != "" {
		// serveHTTP returns only when it fails.
		fmt.Fprintln(os.Stderr, "tracerps:", serveHTTP(*serve, *port))
		os.Exit(1)
	}
	bins := flag.Args()
	if len(bins) == 0 {
		bins = []string{"bin/sidecar"}
	}
	cases := strings.Split(*list, ",")
	if cases[0] != "off" {
		fmt.Fprintln(os.Stderr, "tracerps: -cases must start with off (the ratios' reference)")
		os.Exit(2)
	}
	for _, c := range cases[1:] {
		if _, err := strconv.ParseFloat(c, 64); err != nil {
			fmt.Fprintf(os.Stderr, "tracerps: -cases: %q is neither off nor a percentage\n", c)
			os.Exit(2)
		}
	}
	sideCPU, loadCPU, _ := strings.Cut(*cpus, ",")
	if _, err := exec.LookPath("wrk"); err != nil {
		fmt.Fprintln(os.Stderr, "tracerps: needs wrk (apt-get install wrk)")
		os.Exit(2)
	}
	b := &bench{sideCPU: sideCPU, loadCPU: loadCPU, conns: *conns, minFlush: *minSpan}
	defer b.stopAll()
	if err := b.run(bins, cases, *rounds, *dur, *warm); err != nil {
		b.stopAll()
		fmt.Fprintln(os.Stderr, "tracerps:", err)
		os.Exit(1)
	}
}

// defaultCPUs pins the sidecars to CPU 0 and the rest to CPU 1 when there
// are two CPUs, as the peers script does.
func defaultCPUs() string {
	if runtime.NumCPU() >= 2 {
		return "0,1"
	}
	return ""
}

// bench holds the processes of one run.
type bench struct {
	sideCPU, loadCPU string
	conns, minFlush  int
	dir              string
	procs            []*exec.Cmd
}

// sidecar is one sidecar under load: a binary at one tracing case.
type sidecar struct {
	bin, tracing string
	port, admin  int
	cmd          *exec.Cmd
}

// sample is one measured run of wrk against one sidecar.
type sample struct {
	rps, cpuPerReq   float64 // requests/s; the sidecar's CPU µs per request
	receiverShare    float64 // the receiver's CPU time over the sidecar's
	requests, spans  int
	exports          int     // the sidecar's OTLP exports (reports_sent)
	busy             float64 // the sidecar's CPU time over the run's wall time
	receiverCPUPerRq float64 // the receiver's CPU µs per request
}

func (b *bench) run(bins, cases []string, rounds int, dur, warm time.Duration) error {
	dir, err := os.MkdirTemp("", "tracerps")
	if err != nil {
		return err
	}
	b.dir = dir
	upPort, err := b.helper("upstream")
	if err != nil {
		return err
	}
	rcvPort, err := b.helper("receiver")
	if err != nil {
		return err
	}
	receiver := b.procs[len(b.procs)-1]
	var sides []*sidecar
	for bi, bin := range bins {
		for _, c := range cases {
			s := &sidecar{bin: bin, tracing: c}
			if err := b.start(s, fmt.Sprintf("%d-%s", bi, c), upPort, rcvPort); err != nil {
				return err
			}
			sides = append(sides, s)
		}
	}
	for _, s := range sides {
		if _, err := b.wrk(s.port, warm); err != nil {
			return fmt.Errorf("warm-up of %s tracing %s: %w", s.bin, s.tracing, err)
		}
	}
	fmt.Printf("tracerps: %d rounds of %s per case, wrk -t1 -c%d, sidecars on CPU %q, wrk, upstream and receiver on CPU %q\n",
		rounds, dur, b.conns, b.sideCPU, b.loadCPU)
	// results[i] holds the samples of sides[i], one per round.
	k := len(cases)
	results := make([][]sample, len(sides))
	for r := range rounds {
		for i := range sides {
			// The order rotates per round over the cases, the binaries
			// of one case run one after the other.
			idx := (i + r*len(bins)) % len(sides)
			s := sides[idx]
			sm, err := b.measure(s, receiver, dur)
			if err != nil {
				return fmt.Errorf("round %d, %s tracing %s: %w", r+1, s.bin, s.tracing, err)
			}
			results[idx] = append(results[idx], sm)
			fmt.Printf("round %d  %-28s tracing %-4s %9.0f requests/s  %6.2f µs CPU per request, sidecar busy %3.0f%%",
				r+1, filepath.Base(s.bin), s.tracing, sm.rps, sm.cpuPerReq, 100*sm.busy)
			if s.tracing != "off" {
				fmt.Printf("  %d spans in %d exports; receiver CPU %.1f%% of the sidecar's (%.2f µs per request)", sm.spans, sm.exports, 100*sm.receiverShare, sm.receiverCPUPerRq)
			}
			fmt.Println()
		}
		for bi, bin := range bins {
			off := results[bi*k][r]
			for ci := 1; ci < k; ci++ {
				sm := results[bi*k+ci][r]
				fmt.Printf("round %d  %-28s tracing %-4s requests/s %+6.1f%% vs off, CPU per request %+6.1f%%\n",
					r+1, filepath.Base(bin), cases[ci], 100*(sm.rps/off.rps-1), 100*(sm.cpuPerReq/off.cpuPerReq-1))
			}
		}
	}
	fmt.Println("medians over the rounds (range):")
	for bi, bin := range bins {
		for ci, c := range cases {
			var rps, cpu, rr, cr, share []float64
			for r := range rounds {
				sm, off := results[bi*k+ci][r], results[bi*k][r]
				rps, cpu = append(rps, sm.rps), append(cpu, sm.cpuPerReq)
				rr, cr = append(rr, 100*(sm.rps/off.rps-1)), append(cr, 100*(sm.cpuPerReq/off.cpuPerReq-1))
				share = append(share, 100*sm.receiverShare)
			}
			fmt.Printf("%-28s tracing %-4s %9.0f requests/s (%s)  %6.2f µs CPU per request (%s)", filepath.Base(bin), c,
				median(rps), spread(rps, "%.0f"), median(cpu), spread(cpu, "%.2f"))
			if ci > 0 {
				fmt.Printf("  requests/s %+.1f%% vs off (%s), CPU per request %+.1f%% (%s), receiver CPU %.1f%% of the sidecar's",
					median(rr), spread(rr, "%+.1f"), median(cr), spread(cr, "%+.1f"), median(share))
			}
			fmt.Println()
		}
	}
	return nil
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

func spread(v []float64, f string) string {
	return fmt.Sprintf(f+" to "+f, slices.Min(v), slices.Max(v))
}

// helper starts this program as the upstream or the receiver on the load
// CPU and returns its port once it accepts connections.
func (b *bench) helper(kind string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return 0, err
	}
	cmd := benchkit.Pinned(b.loadCPU, self, "-serve", kind, "-port", strconv.Itoa(port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	b.procs = append(b.procs, cmd)
	return port, waitPort(fmt.Sprintf("127.0.0.1:%d", port))
}

// start runs s's sidecar on the sidecar CPU.
func (b *bench) start(s *sidecar, name string, upPort, rcvPort int) error {
	var err error
	if s.port, err = benchkit.FreePort(); err != nil {
		return err
	}
	if s.admin, err = benchkit.FreePort(); err != nil {
		return err
	}
	cfg := benchkit.Bootstrap(s.port, "127.0.0.1", upPort)
	cfg = strings.Replace(cfg, "port_value: 0}}", fmt.Sprintf("port_value: %d}}", s.admin), 1)
	if s.tracing != "off" {
		cfg = withTracing(cfg, s.tracing, rcvPort)
		if b.minFlush > 0 {
			cfg = fmt.Sprintf("layered_runtime: {layers: [{name: static, static_layer: {tracing.opentelemetry.min_flush_spans: %d}}]}\n", b.minFlush) + cfg
		}
	}
	path := filepath.Join(b.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := benchkit.Pinned(b.sideCPU, s.bin, "-c", path, "--concurrency", "1", "--log-level", "warning", "--disable-hot-restart")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd)
	s.cmd = cmd
	if err := waitPort(fmt.Sprintf("127.0.0.1:%d", s.port)); err != nil {
		out, _ := os.ReadFile(log.Name())
		return fmt.Errorf("%s tracing %s: %w: %s", s.bin, s.tracing, err, out)
	}
	return nil
}

// measure runs wrk against s for dur, with the CPU time of s and of the
// receiver and the spans s exported meanwhile.
func (b *bench) measure(s *sidecar, receiver *exec.Cmd, dur time.Duration) (sample, error) {
	admin := fmt.Sprintf("http://127.0.0.1:%d", s.admin)
	spans0, exports0, err := b.spans(s, admin)
	if err != nil {
		return sample{}, err
	}
	side0, rcv0, t0 := cpuTime(s.cmd), cpuTime(receiver), time.Now()
	res, err := b.wrk(s.port, dur)
	if err != nil {
		return sample{}, err
	}
	side, rcv := cpuTime(s.cmd)-side0, cpuTime(receiver)-rcv0
	sm := sample{rps: res.rps, requests: res.requests, busy: float64(side) / float64(time.Since(t0))}
	sm.cpuPerReq = float64(side.Microseconds()) / float64(res.requests)
	if s.tracing == "off" {
		return sm, nil
	}
	// The spans of the run's last requests may wait for the next export,
	// at most the flush interval (5 s) away: the count is checked against
	// the requests with that slack only.
	spans1, exports1, err := b.spans(s, admin)
	if err != nil {
		return sample{}, err
	}
	sm.spans, sm.exports = spans1-spans0, exports1-exports0
	if side > 0 {
		sm.receiverShare = float64(rcv) / float64(side)
	}
	sm.receiverCPUPerRq = float64(rcv.Microseconds()) / float64(res.requests)
	if s.tracing == "100" && float64(sm.spans) < 0.9*float64(res.requests) {
		return sm, fmt.Errorf("%d spans exported for %d requests at 100%% sampling", sm.spans, res.requests)
	}
	return sm, nil
}

// spans is s's tracing.opentelemetry.spans_sent and reports_sent.
func (b *bench) spans(s *sidecar, admin string) (spans, exports int, err error) {
	if s.tracing == "off" {
		return 0, 0, nil
	}
	if spans, err = benchkit.Counter(admin, "tracing.opentelemetry.spans_sent"); err != nil {
		return 0, 0, err
	}
	exports, err = benchkit.Counter(admin, "tracing.opentelemetry.reports_sent")
	return spans, exports, err
}

// cpuTime is the CPU time of cmd's process: the sidecar or the receiver
// itself, or taskset's child when pinned (taskset execs, so the pid is
// the same).
func cpuTime(cmd *exec.Cmd) time.Duration { return benchkit.CPUTime(cmd.Process.Pid) }

// wrkResult is what wrk reported.
type wrkResult struct {
	requests int
	rps      float64
}

var (
	reqsRe   = regexp.MustCompile(`(\d+) requests in`)
	rpsRe    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	errorsRe = regexp.MustCompile(`Socket errors:|Non-2xx or 3xx responses:`)
)

// wrk loads 127.0.0.1:port for dur and fails on any error or non-200.
func (b *bench) wrk(port int, dur time.Duration) (wrkResult, error) {
	secs := max(1, int(dur.Round(time.Second)/time.Second))
	cmd := benchkit.Pinned(b.loadCPU, "wrk", "-t1", fmt.Sprintf("-c%d", b.conns), fmt.Sprintf("-d%ds", secs),
		fmt.Sprintf("http://127.0.0.1:%d/", port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	if errorsRe.Match(out) {
		return wrkResult{}, fmt.Errorf("wrk saw errors: %s", out)
	}
	m, m2 := reqsRe.FindSubmatch(out), rpsRe.FindSubmatch(out)
	if m == nil || m2 == nil {
		return wrkResult{}, fmt.Errorf("wrk's output not understood: %s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	rps, _ := strconv.ParseFloat(string(m2[1]), 64)
	if n == 0 {
		return wrkResult{}, fmt.Errorf("no request answered: %s", out)
	}
	return wrkResult{requests: n, rps: rps}, nil
}

// stopAll stops the processes this run started, sidecars first.
func (b *bench) stopAll() {
	for i := len(b.procs) - 1; i >= 0; i-- {
		benchkit.Stop(b.procs[i])
	}
	b.procs = nil
	if b.dir != "" {
		os.RemoveAll(b.dir)
		b.dir = ""
	}
}

// waitPort waits up to 30 s for addr to accept connections.
func waitPort(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not open", addr)
}

// withTracing adds the HTTP connection manager's tracing at percent random
// sampling to the benchkit bootstrap, with the OpenTelemetry tracer
// exporting over OTLP/HTTP to a cluster of the receiver at port (the
// configuration test/bench/h1count measures).
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

// serveHTTP runs the upstream (128 bytes to every request) or the OTLP
// receiver (each export's body read and discarded, an empty 200) on port,
// until killed. Keep-alive, one goroutine per connection, as a collector.
func serveHTTP(kind string, port int) error {
	var response []byte
	switch kind {
	case "upstream":
		body := strings.Repeat("0123456789abcdef", 8)
		response = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	case "receiver":
		response = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	default:
		return fmt.Errorf("-serve %q is neither upstream nor receiver", kind)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go answer(c, response)
	}
}

// answer reads requests on c, their bodies discarded, and writes response
// to each.
func answer(c net.Conn, response []byte) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	var (
		head []byte
		req  http1.Request
		b    http1.BodyReader
		err  error
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
			for {
				_, err := b.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
		}
		if _, err := c.Write(response); err != nil {
			return
		}
	}
}
