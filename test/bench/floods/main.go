// Command floods measures the sidecar under the HTTP/2 floods its limits
// defend against: for each attack, repeated from fresh connections for a
// fixed time, it records how much the sidecar's resident memory grows and
// what a well-behaved h2c client on another connection sees of its
// latency, against the same client on a quiet proxy.
//
//	go run ./test/bench/floods -sidecar bin/sidecar
//
// The sidecar runs alone on CPU 0 (taskset, when present), with one worker;
// the probe and the upstream share CPU 1 with the attackers, which are
// child processes of this command at the lowest priority (nice 19), so
// that what the probe sees is the sidecar's doing, not the attackers'
// competition for its own CPU.
//
// Everything runs on 127.0.0.1; every phase, connection and read is bounded
// in time; only the processes it started are signalled.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
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

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	sidecar := flag.String("sidecar", "bin/sidecar", "the sidecar binary")
	phase := flag.Duration("phase", 5*time.Second, "how long each attack (and the quiet baseline) lasts")
	attackers := flag.Int("attackers", 2, "attack connections at a time")
	// The child mode: play attack number -attack against -addr for -phase.
	attackIndex := flag.Int("attack", -1, "internal: run as an attacker process")
	addr := flag.String("addr", "", "internal: the address to attack")
	sink := flag.String("sink", "", "internal: run as a sink on this address")
	flag.Parse()
	if *attackIndex >= 0 {
		runAttacker(*addr, &attacks[*attackIndex], *phase, *attackers)
		return
	}
	if *sink != "" {
		runSink(*sink)
		return
	}
	if err := run(*sidecar, *phase, *attackers); err != nil {
		log.Fatal(err)
	}
}

// runAttacker plays an attack from connections attackers at a time until
// phase ends, and prints how many connections it used.
func runAttacker(addr string, a *attack, phase time.Duration, attackers int) {
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	head, chunk := a.bytes()
	var wg sync.WaitGroup
	var count atomic.Int64
	for range attackers {
		wg.Go(func() {
			for ctx.Err() == nil {
				runAttack(ctx, addr, head, chunk, a.times)
				count.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Println(count.Load())
}

// runSink accepts connections on addr and closes each after reading up to
// 16 KiB, doing nothing else: the control for what an attack costs the
// probe when the proxy does no work for it.
func runSink(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 16<<10)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = c.Read(buf[:0:0])
			_, _ = io.ReadFull(c, make([]byte, 16<<10))
			_ = c.Close()
		}()
	}
}

// pinned runs name on cpu with taskset when it is installed.
func pinned(cpu string, name string, args ...string) *exec.Cmd {
	if ts, err := exec.LookPath("taskset"); err == nil {
		return exec.Command(ts, append([]string{"-c", cpu, name}, args...)...)
	}
	return exec.Command(name, args...)
}

// attack builds the bytes one attack connection sends after the preface.
type attack struct {
	name string
	// frames writes the attack; block is a request's HPACK block.
	frames func(fr *http2.Framer, block []byte)
	// times is how often the chunk is written on one connection, at
	// most (the connection usually ends first).
	times int
}

var attacks = []attack{
	{name: "PING flood, client not reading", times: 400, frames: func(fr *http2.Framer, _ []byte) {
		for range 5000 {
			_ = fr.WritePing(false, [8]byte{})
		}
	}},
	{name: "SETTINGS flood, client not reading", times: 400, frames: func(fr *http2.Framer, _ []byte) {
		for range 5000 {
			_ = fr.WriteSettings()
		}
	}},
	{name: "rapid reset (HEADERS + RST_STREAM)", times: 1, frames: func(fr *http2.Framer, block []byte) {
		for id := uint32(1); id < 40_000; id += 2 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
			_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	}},
	{name: "CONTINUATION flood (64 MiB header block)", times: 256, frames: func(fr *http2.Framer, block []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block})
		fill := bytes.Repeat([]byte{0x80 | 16}, 16384)
		for range 16 {
			_ = fr.WriteContinuation(1, false, fill)
		}
	}},
	{name: "empty CONTINUATION frames", times: 1, frames: func(fr *http2.Framer, block []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:2]})
		for range 200_000 {
			_ = fr.WriteContinuation(1, false, nil)
		}
	}},
	{name: "empty DATA frames", times: 1, frames: func(fr *http2.Framer, block []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true})
		for range 100_000 {
			_ = fr.WriteData(1, false, nil)
		}
	}},
	{name: "PRIORITY flood", times: 1, frames: func(fr *http2.Framer, _ []byte) {
		for i := range 100_000 {
			_ = fr.WritePriority(uint32(2*i+1), http2.PriorityParam{Weight: 16})
		}
	}},
	{name: "WINDOW_UPDATE flood", times: 1, frames: func(fr *http2.Framer, _ []byte) {
		for range 100_000 {
			_ = fr.WriteWindowUpdate(0, 1)
		}
	}},
	{name: "big responses, windows open, client not reading", times: 1, frames: func(fr *http2.Framer, _ []byte) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for _, f := range requestFields("/big") {
			_ = enc.WriteField(f)
		}
		for id := uint32(1); id < 200; id += 2 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true})
		}
	}},
}

func run(sidecar string, phase time.Duration, attackers int) error {
	up, err := startUpstream()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "floods-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := filepath.Join(dir, "bootstrap.yaml")
	upHost, upPort, err := net.SplitHostPort(up)
	if err != nil {
		return err
	}
	upPortNum, err := strconv.Atoi(upPort)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg, []byte(benchkit.Bootstrap(port, upHost, upPortNum)), 0o600); err != nil {
		return err
	}
	if ts, err := exec.LookPath("taskset"); err == nil {
		// This process (the probe and the upstream) keeps to CPU 1.
		_ = exec.Command(ts, "-a", "-p", "-c", "1", strconv.Itoa(os.Getpid())).Run()
	}
	cmd := pinned("0", sidecar, "-c", cfg, "--concurrency", "1", "--log-level", "error",
		"--admin-address-path", filepath.Join(dir, "admin.addr"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	if err := waitPort(addr, 10*time.Second); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	fmt.Printf("sidecar %s, pid %d, %s per phase, %d attack connections at a time\n\n", sidecar, pid, phase, attackers)

	probe := newProbe(addr)
	quiet := measure(pid, phase, probe, -1, attackers)
	fmt.Println("| attack | attack connections | sidecar CPU | RSS before | RSS peak growth | probe requests | probe p50 | probe p99 | p99 vs quiet |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| none (quiet) | 0 | %.0f%% | %.1f MiB | %.1f MiB | %d | %s | %s | 1.00× |\n",
		quiet.cpu*100, mib(quiet.rssBefore), mib(quiet.rssPeak-quiet.rssBefore), quiet.n, us(quiet.p50), us(quiet.p99))
	// The control: the empty DATA attack against a sink sharing the
	// sidecar's CPU, which does nothing with it.
	sinkPort, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	sinkAddr := fmt.Sprintf("127.0.0.1:%d", sinkPort)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sinkCmd := pinned("0", self, "-sink", sinkAddr)
	if err := sinkCmd.Start(); err != nil {
		return err
	}
	defer func() { _ = sinkCmd.Process.Kill(); _ = sinkCmd.Wait() }()
	if err := waitPort(sinkAddr, 10*time.Second); err != nil {
		return err
	}
	ctl := measureAt(pid, phase, probe, 5, attackers, sinkAddr)
	fmt.Printf("| control: %s against a sink on the sidecar's CPU | %d | %.0f%% | %.1f MiB | %.1f MiB | %d | %s | %s | %.2f× |\n",
		attacks[5].name, ctl.attacks, ctl.cpu*100, mib(ctl.rssBefore), mib(ctl.rssPeak-ctl.rssBefore), ctl.n, us(ctl.p50), us(ctl.p99),
		float64(ctl.p99)/float64(quiet.p99))
	for i, a := range attacks {
		r := measure(pid, phase, probe, i, attackers)
		fmt.Printf("| %s | %d | %.0f%% | %.1f MiB | %.1f MiB | %d | %s | %s | %.2f× |\n",
			a.name, r.attacks, r.cpu*100, mib(r.rssBefore), mib(r.rssPeak-r.rssBefore), r.n, us(r.p50), us(r.p99),
			float64(r.p99)/float64(quiet.p99))
	}
	return nil
}

// result is what one phase measured.
type result struct {
	rssBefore, rssPeak int64   // bytes
	cpu                float64 // the sidecar's CPU time over the phase's
	n                  int
	p50, p99           time.Duration
	attacks            int64
}

// measure runs the probe for phase while attack number a plays (-1:
// none) from a child process, sampling the sidecar's RSS.
func measure(pid int, phase time.Duration, p *probe, a int, attackers int) result {
	return measureAt(pid, phase, p, a, attackers, p.addr)
}

// measureAt is measure with the attack aimed at target.
func measureAt(pid int, phase time.Duration, p *probe, a int, attackers int, target string) result {
	// Let memory from the last phase settle.
	time.Sleep(500 * time.Millisecond)
	r := result{rssBefore: rss(pid)}
	r.rssPeak = r.rssBefore
	cpu0, t0 := cpuTime(pid), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), phase)
	defer cancel()
	var wg sync.WaitGroup
	var attacker *exec.Cmd
	var out bytes.Buffer
	if a >= 0 {
		self, err := os.Executable()
		if err != nil {
			log.Fatal(err)
		}
		attacker = pinned("1", "nice", "-n", "19", self, "-attack", strconv.Itoa(a), "-addr", target,
			"-phase", phase.String(), "-attackers", strconv.Itoa(attackers))
		attacker.Stdout, attacker.Stderr = &out, os.Stderr
		if err := attacker.Start(); err != nil {
			log.Fatal(err)
		}
	}
	wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.rssPeak = max(r.rssPeak, rss(pid))
			}
		}
	})
	lat := p.run(ctx)
	wg.Wait()
	r.cpu = (cpuTime(pid) - cpu0).Seconds() / time.Since(t0).Seconds()
	if attacker != nil {
		// The attacker stops by itself at the end of its phase.
		timer := time.AfterFunc(10*time.Second, func() { _ = attacker.Process.Kill() })
		_ = attacker.Wait()
		timer.Stop()
		r.attacks, _ = strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	}
	r.n = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

// bytes serialises the attack once: the preface and the client's
// SETTINGS, then the chunk each connection writes a.times times.
func (a *attack) bytes() (head, chunk []byte) {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	fr.AllowIllegalWrites = true
	_ = fr.WriteSettings()
	head = bytes.Clone(buf.Bytes())
	buf.Reset()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range requestFields("/") {
		_ = enc.WriteField(f)
	}
	a.frames(fr, hb.Bytes())
	return head, buf.Bytes()
}

// runAttack plays one attack connection to its end, bounded by ctx.
func runAttack(ctx context.Context, addr string, head, chunk []byte, times int) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		time.Sleep(10 * time.Millisecond)
		return
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(head); err != nil {
		return
	}
	for range times {
		if _, err := nc.Write(chunk); err != nil {
			break
		}
	}
	// Read what the server still sends (the GOAWAY) until it closes.
	_, _ = io.Copy(io.Discard, bufio.NewReader(nc))
}

// probe is a well-behaved h2c client on its own connection, sending one
// request at a time.
type probe struct {
	addr   string
	client *http.Client
}

func newProbe(addr string) *probe {
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	return &probe{addr: addr, client: &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{Protocols: h2c},
	}}
}

// run sends requests until ctx ends and returns their latencies; a failed
// request counts as taking the client's whole timeout.
func (p *probe) run(ctx context.Context) []time.Duration {
	var lat []time.Duration
	for ctx.Err() == nil {
		t0 := time.Now()
		resp, err := p.client.Get("http://" + p.addr + "/")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		d := time.Since(t0)
		if err != nil {
			d = p.client.Timeout
		}
		lat = append(lat, d)
	}
	return lat
}

func requestFields(path string) []hpack.HeaderField {
	return []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "bench.example"}, {Name: ":path", Value: path},
	}
}

// startUpstream serves 128 bytes on / and 4 MiB on /big over HTTP/1.1.
func startUpstream() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	small := strings.Repeat("a", 128)
	big := make([]byte, 4<<20)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		_, _ = io.WriteString(w, small)
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), nil
}

func waitPort(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New(addr + " did not open")
}

// rss reads a process's resident memory in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// cpuTime reads a process's user and system CPU time from /proc.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	// Linux reports clock ticks of 1/100 s (USER_HZ).
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func us(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + " µs" }
