package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

// loadConns is how many keep-alive connections the memory test's load
// holds at once (the peers benchmark's).
const loadConns = 64

// maxLoadRequests bounds each load phase's count, whatever its duration.
const maxLoadRequests = 2_000_000

// residentMemory is the "rss" test: the resident memory of each proxy,
// every one a fresh process, at rest after start-up and after a bounded
// load (64 keep-alive connections asking for the 128-byte body, then the
// 16 KiB one, c.dur each, closed before the reading), split into
// anonymous memory (heap, stacks) and pages of files (the binary, its
// libraries), with the peak (VmHWM). A sidecar's /memory comes from a
// second fresh process put through the same sequence: answering it runs
// admin code (and faults its pages in) that the resident figures of the
// first must not include.
func residentMemory(c config, kinds []kind, dir string, up int) error {
	fmt.Printf("| resident memory (%d connections, 128 B then 16 KiB bodies, %s each) | at rest: RSS | anon | file | after the load: RSS | anon | file | peak (VmHWM) | requests |\n|---|---|---|---|---|---|---|---|---|\n", loadConns, c.dur)
	var goRows []string
	for _, k := range kinds {
		r, err := loadMemory(c, k, dir, up, false)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", k.name,
			mib(r.rest.rss), mib(r.rest.anon), mib(r.rest.file), mib(r.loaded.rss), mib(r.loaded.anon), mib(r.loaded.file), mib(r.peak), r.requests)
		if strings.HasPrefix(k.name, "outrigger") {
			g, err := loadMemory(c, k, dir, up, true)
			if err != nil {
				return err
			}
			goRows = append(goRows, goRow(k.name+", at rest", g.restGo), goRow(k.name+", after the load", g.loadedGo))
		}
	}
	fmt.Println()
	if len(goRows) > 0 {
		fmt.Printf("| sidecar /memory (another fresh process, same sequence) | Go heap in use (allocated) | heap held (heap_size) | returned to the system (pageheap_unmapped) | free, not returned (pageheap_free) | runtime total (total_physical_bytes) |\n|---|---|---|---|---|---|\n")
		for _, r := range goRows {
			fmt.Println(r)
		}
		fmt.Println()
	}
	return nil
}

// loaded is what one run of the rss test read from a proxy.
type loaded struct {
	rest, loaded     resident
	peak, requests   int64
	restGo, loadedGo goMemory
}

// loadMemory starts a fresh k, reads its memory at rest, puts it under
// the load and reads its memory again; with goMem it reads the sidecar's
// /memory too (and then the resident figures include the admin's work).
func loadMemory(c config, k kind, dir string, up int, goMem bool) (loaded, error) {
	var r loaded
	p, err := k.start(k, c.cpu, dir, up)
	if err != nil {
		return r, fmt.Errorf("%s: %w", k.name, err)
	}
	defer stop(p)
	if r.rest, r.restGo, err = readMemory(p, c.settle, goMem); err != nil {
		return r, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.h1)
	var done, failed atomic.Int64
	for _, path := range []string{"/small", "/big"} {
		ctx, cancel := context.WithTimeout(context.Background(), c.dur)
		keepAliveLoad(ctx, addr, path, &done, &failed)
		cancel()
	}
	if r.loaded, r.loadedGo, err = readMemory(p, c.settle, goMem); err != nil {
		return r, err
	}
	r.peak, r.requests = benchkit.Status(p.pid(), "VmHWM"), done.Load()
	if failed.Load() > 0 {
		return r, fmt.Errorf("%s: %d requests failed under load", k.name, failed.Load())
	}
	return r, nil
}

// resident is one reading of a process's resident memory, in bytes.
type resident struct{ rss, anon, file int64 }

// readMemory waits settle, then reads p's resident memory and, with
// goMem, its /memory.
func readMemory(p *proxy, settle time.Duration, goMem bool) (resident, goMemory, error) {
	time.Sleep(settle)
	pid := p.pid()
	r := resident{benchkit.Status(pid, "VmRSS"), benchkit.Status(pid, "RssAnon"), benchkit.Status(pid, "RssFile")}
	if !goMem {
		return r, goMemory{}, nil
	}
	m, err := p.memory()
	return r, m, err
}

// goRow is one row of the /memory table.
func goRow(name string, m goMemory) string {
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", name, mib(m.heap), mib(m.heapSize), mib(m.unmapped), mib(m.free), mib(m.physical))
}

// mib renders bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// keepAliveLoad runs loadConns keep-alive clients against addr, each
// sending GET path and reading its response in a closed loop, until ctx
// ends or maxLoadRequests were sent; it counts the completed requests in
// done and the failed ones in failed (a client whose request failed
// reconnects).
func keepAliveLoad(ctx context.Context, addr, path string, done, failed *atomic.Int64) {
	req := "GET " + path + " HTTP/1.1\r\nHost: bench\r\n\r\n"
	var wg sync.WaitGroup
	var started atomic.Int64
	for range loadConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c net.Conn
			br := bufio.NewReaderSize(nil, 32<<10)
			defer func() {
				if c != nil {
					_ = c.Close()
				}
			}()
			for ctx.Err() == nil && started.Add(1) <= maxLoadRequests {
				if c == nil {
					var err error
					if c, err = net.DialTimeout("tcp", addr, ioTimeout); err != nil {
						failed.Add(1)
						c = nil
						continue
					}
					br.Reset(c)
				}
				if err := h1Send(c, br, req); err != nil {
					failed.Add(1)
					_ = c.Close()
					c = nil
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
}
