package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// h2loadDone is h2load's summary of a run: "requests: N total, N started,
// N done, N succeeded, N failed, N errored, N timeout".
var h2loadDone = regexp.MustCompile(`requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded[^\n]*`)

// h2loadStatus is h2load's count of the responses by status class:
// "status codes: N 2xx, N 3xx, N 4xx, N 5xx".
var h2loadStatus = regexp.MustCompile(`status codes: [^\n]*`)

// loadH2c sends n GET requests with h2load over conns h2c (prior
// knowledge) connections, streams at a time on each, as the peers script
// does, and checks that every one succeeded. The run is bounded by ctx and
// a timeout.
func loadH2c(ctx context.Context, addr string, conns, streams, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "h2load", "-t1", "-c"+strconv.Itoa(conns), "-m"+strconv.Itoa(streams),
		"-n"+strconv.Itoa(n), "http://"+addr+"/").CombinedOutput()
	if err != nil {
		return fmt.Errorf("h2load: %w: %s", err, out)
	}
	m := h2loadDone.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("h2load printed no summary: %s", out)
	}
	if total, ok := string(m[1]), string(m[2]); total != strconv.Itoa(n) || ok != total {
		// h2load's summary says how the others ended: reset, timed out,
		// or answered with which class of status.
		return fmt.Errorf("h2load: %s of %s requests succeeded: %s; %s", ok, total,
			h2loadDone.Find(out), h2loadStatus.Find(out))
	}
	return nil
}
