// Command hotrestart measures what a hot restart costs the traffic going
// through the sidecar: steady load from keep-alive clients and from
// clients that open a connection per request, through a listener routing
// to a loopback upstream, while the sidecar hot-restarts several times in a
// row (--restart-epoch 1, 2, ...). It counts the answers, the failed
// requests and the refused connections (there must be none), and prints
// how long each hand-over took. Everything runs on 127.0.0.1; every run is
// bounded in time; only the processes it starts are stopped.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	var (
		sidecar  = flag.String("sidecar", "bin/sidecar", "the sidecar binary")
		dur      = flag.Duration("dur", 3*time.Second, "load before, between and after the restarts")
		restarts = flag.Int("restarts", 2, "hot restarts in a row")
	)
	flag.Parse()
	if *dur <= 0 || *dur > time.Minute || *restarts < 1 || *restarts > 10 {
		fmt.Fprintln(os.Stderr, "hotrestart bench: -dur up to 1m, -restarts 1..10")
		os.Exit(1)
	}
	if err := run(*sidecar, *dur, *restarts); err != nil {
		fmt.Fprintln(os.Stderr, "hotrestart bench:", err)
		os.Exit(1)
	}
}

func run(sidecar string, dur time.Duration, restarts int) error {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	upSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = upSrv.Serve(up) }()
	defer upSrv.Close()
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hotrestart-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(cfg, []byte(benchkit.Bootstrap(port, "127.0.0.1", up.Addr().(*net.TCPAddr).Port)), 0o600); err != nil {
		return err
	}
	baseID := strconv.Itoa(1000 + rand.IntN(400_000_000))
	start := func(epoch int) (*exec.Cmd, error) {
		cmd := exec.Command(sidecar, "-c", cfg, "--base-id", baseID, "--restart-epoch", strconv.Itoa(epoch),
			"--drain-time-s", "1", "--parent-shutdown-time-s", "2", "-l", "warning",
			"--admin-address-path", filepath.Join(dir, fmt.Sprintf("admin.%d", epoch)))
		cmd.Stderr = os.Stderr
		return cmd, cmd.Start()
	}
	cur, err := start(0)
	if err != nil {
		return err
	}
	defer func() { _ = cur.Process.Signal(syscall.SIGINT); _ = cur.Wait() }()
	if err := waitServing(port, 20*time.Second); err != nil {
		return err
	}
	load := startLoad(port, time.Duration(restarts+1)*(dur+30*time.Second))
	began := time.Now()
	time.Sleep(dur)
	var handovers []time.Duration
	for epoch := 1; epoch <= restarts; epoch++ {
		t0 := time.Now()
		next, err := start(epoch)
		if err != nil {
			return err
		}
		exited := make(chan error, 1)
		parent := cur
		go func() { exited <- parent.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				_ = next.Process.Signal(syscall.SIGINT)
				_ = next.Wait()
				return fmt.Errorf("epoch %d exited badly: %w", epoch-1, err)
			}
		case <-time.After(30 * time.Second):
			_ = next.Process.Kill()
			return fmt.Errorf("epoch %d did not exit within 30s of epoch %d's start", epoch-1, epoch)
		}
		cur = next
		handovers = append(handovers, time.Since(t0))
		time.Sleep(dur)
	}
	res := load.stop()
	elapsed := time.Since(began)
	fmt.Printf("hot restarts: %d in a row, epochs 0..%d; load: %d keep-alive + %d connection-per-request clients\n",
		restarts, restarts, keepAliveClients, freshClients)
	fmt.Printf("requests answered: %d (%.0f/s), failed: %d, refused connections: %d\n",
		res.ok, float64(res.ok)/elapsed.Seconds(), res.failed, res.refused)
	for i, h := range handovers {
		fmt.Printf("restart %d: epoch %d started to epoch %d exited: %s (drain 1s, parent shutdown 2s)\n", i+1, i+1, i, h.Round(10*time.Millisecond))
	}
	for i, e := range res.errors {
		if i == 5 {
			break
		}
		fmt.Println("  error:", e)
	}
	if res.failed > 0 || res.refused > 0 {
		return errors.New("requests were lost during the hot restarts")
	}
	return nil
}

// Load shape: a few keep-alive clients and a few opening a connection per
// request (which would see a refused connection), each pausing between
// requests so that the two cores stay shared with the sidecars.
const (
	keepAliveClients = 4
	freshClients     = 2
	pause            = time.Millisecond
)

type result struct {
	ok, failed, refused int
	errors              []string
}

type load struct {
	mu   sync.Mutex
	res  result
	done chan struct{}
	wg   sync.WaitGroup
}

func startLoad(port int, bound time.Duration) *load {
	l := &load{done: make(chan struct{})}
	deadline := time.Now().Add(bound)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	client := func(keepAlive bool) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 1}}
		defer c.CloseIdleConnections()
		for time.Now().Before(deadline) {
			select {
			case <-l.done:
				return
			default:
			}
			resp, err := c.Get(url)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && (resp.StatusCode != 200 || string(body) != "ok") {
					err = fmt.Errorf("%d %q", resp.StatusCode, body)
				}
			}
			l.mu.Lock()
			switch {
			case err == nil:
				l.res.ok++
			case errors.Is(err, syscall.ECONNREFUSED):
				l.res.refused++
				l.res.errors = append(l.res.errors, err.Error())
			default:
				l.res.failed++
				l.res.errors = append(l.res.errors, err.Error())
			}
			l.mu.Unlock()
			time.Sleep(pause)
		}
	}
	for range keepAliveClients {
		l.wg.Go(func() { client(true) })
	}
	for range freshClients {
		l.wg.Go(func() { client(false) })
	}
	return l
}

func (l *load) stop() result {
	close(l.done)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
}

// waitServing waits until the listener answers.
func waitServing(port int, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the sidecar did not serve within the bound")
}
