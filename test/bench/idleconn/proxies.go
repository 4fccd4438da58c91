package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

// proxy is one running system under test.
type proxy struct {
	name string
	// h1 and h2c are the ports of its HTTP/1.1 and h2c front-ends (h2c
	// 0: none).
	h1, h2c int
	// admin is the sidecar's admin address ("": not a sidecar).
	admin string
	cmd   *exec.Cmd
}

// pid is the proxy's process (for nginx, its master; benchkit sums its
// worker in).
func (p *proxy) pid() int { return p.cmd.Process.Pid }

// kind names the binaries a proxy is started from.
type kind struct {
	name string // the row's name
	bin  string
	// conns is how many connections it must hold at once.
	conns int
	// start writes the configuration into dir and starts bin on cpu in
	// front of the upstream port up.
	start func(k kind, cpu, dir string, up int) (*proxy, error)
}

// startUpstream starts the nginx both proxies forward to (one worker,
// HTTP/1.1 with keep-alive, a 128-byte file at /small and a 16 KiB one at
// /big), on this process's CPU.
func startUpstream(bin, dir string) (*proxy, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "small"), []byte(strings.Repeat("a", 128)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "big"), []byte(strings.Repeat("b", 16<<10)), 0o644); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/upstream.pid;
error_log %[1]s/upstream.err;
worker_rlimit_nofile 4096;
events { worker_connections 2048; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:%[2]d; root %[3]s; }
}
`, dir, port, www)
	p := &proxy{name: "upstream", h1: port}
	cfg := filepath.Join(dir, "upstream.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, "-c", cfg, "-p", dir)
	return p, start(p)
}

// startHAProxy starts haproxy in HTTP mode with one thread: HTTP/1.1 on
// one port, h2c (prior knowledge) on another.
func startHAProxy(k kind, cpu, dir string, up int) (*proxy, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	p := &proxy{name: k.name, h1: ports[0], h2c: ports[1]}
	conf := fmt.Sprintf(`global
  nbthread 1
  maxconn %d
defaults
  mode http
  timeout connect 5s
  timeout client 300s
  timeout server 300s
  timeout http-keep-alive 300s
  http-reuse always
frontend h1
  bind 127.0.0.1:%d
  default_backend up
frontend h2c
  bind 127.0.0.1:%d proto h2
  default_backend up
backend up
  server up 127.0.0.1:%d
`, k.conns+1000, p.h1, p.h2c, up)
	cfg := filepath.Join(dir, k.name+".cfg")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p.cmd = benchkit.Pinned(cpu, k.bin, "-db", "-f", cfg)
	return p, start(p)
}

// startNginx starts nginx as a reverse proxy with one worker and upstream
// keep-alive: HTTP/1.1 on one port, h2c (prior knowledge) on another.
func startNginx(k kind, cpu, dir string, up int) (*proxy, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	p := &proxy{name: k.name, h1: ports[0], h2c: ports[1]}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/%[2]s.pid;
error_log %[1]s/%[2]s.err;
worker_rlimit_nofile %[6]d;
events { worker_connections %[6]d; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  upstream up { server 127.0.0.1:%[3]d; keepalive 64; }
  server {
    listen 127.0.0.1:%[4]d;
    listen 127.0.0.1:%[5]d http2;
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`, dir, k.name, up, p.h1, p.h2c, 2*k.conns+1000)
	cfg := filepath.Join(dir, k.name+".conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p.cmd = benchkit.Pinned(cpu, k.bin, "-c", cfg, "-p", dir)
	return p, start(p)
}

// startSidecar starts a sidecar binary with one worker (GOMAXPROCS=1):
// codec AUTO serves HTTP/1.1 and h2c on one port.
func startSidecar(k kind, cpu, dir string, up int) (*proxy, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	p := &proxy{name: k.name, h1: port, h2c: port}
	cfg := filepath.Join(dir, k.name+".yaml")
	boot := benchkit.Bootstrap(port, "127.0.0.1", up)
	// The admin writes heap profiles here (/heapprofiler).
	boot = strings.Replace(boot, "admin:\n", fmt.Sprintf("admin:\n  profile_path: %q\n", filepath.Join(dir, k.name+".heap")), 1)
	if err := os.WriteFile(cfg, []byte(boot), 0o644); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, k.name+".admin")
	_ = os.Remove(addrFile)
	p.cmd = benchkit.Pinned(cpu, k.bin, "-c", cfg, "--concurrency", "1", "--log-level", "error",
		"--disable-hot-restart", "--admin-address-path", addrFile)
	p.cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	if err := start(p); err != nil {
		return nil, err
	}
	for range 100 {
		if b, err := os.ReadFile(addrFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			p.admin = strings.TrimSpace(string(b))
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(p)
	return nil, errors.New(k.name + ": no admin address")
}

// freePorts returns n loopback ports free a moment ago, all distinct.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// start starts p and waits (10 s at most) until its HTTP/1.1 port
// accepts connections.
func start(p *proxy) error {
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, os.Stderr
	if err := p.cmd.Start(); err != nil {
		return err
	}
	for range 200 {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.h1), time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(p)
	return fmt.Errorf("%s did not come up", p.name)
}

// stop ends a process this program started.
func stop(p *proxy) { benchkit.Stop(p.cmd) }

// goMemory is what the sidecar's admin /memory reports now (rather than
// at the last stats flush): the Go heap in use (allocated, the figure
// behind server.memory_allocated) and all the memory the runtime holds
// from the system (heap, goroutine stacks and the runtime's own).
type goMemory struct{ heap, heapSize, unmapped, free, physical int64 }

// memory reads the sidecar's /memory.
func (p *proxy) memory() (goMemory, error) {
	resp, err := http.Get("http://" + p.admin + "/memory")
	if err != nil {
		return goMemory{}, err
	}
	defer resp.Body.Close()
	var m struct {
		Allocated string `json:"allocated"`
		HeapSize  string `json:"heap_size"`
		Unmapped  string `json:"pageheap_unmapped"`
		Free      string `json:"pageheap_free"`
		Physical  string `json:"total_physical_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return goMemory{}, err
	}
	var g goMemory
	for _, f := range []struct {
		s string
		v *int64
	}{{m.Allocated, &g.heap}, {m.HeapSize, &g.heapSize}, {m.Unmapped, &g.unmapped}, {m.Free, &g.free}, {m.Physical, &g.physical}} {
		*f.v, _ = strconv.ParseInt(f.s, 10, 64)
	}
	return g, nil
}

// adminPost posts to the sidecar's admin.
func (p *proxy) adminPost(path string) error {
	resp, err := http.Post("http://"+p.admin+path, "text/plain", nil)
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

// benchkitRSS is the proxy's resident memory in bytes.
func benchkitRSS(p *proxy) int64 { return benchkit.RSS(p.pid()) }

// benchkitCPU is the CPU time the proxy has used.
func benchkitCPU(p *proxy) time.Duration { return benchkit.CPUTime(p.pid()) }
