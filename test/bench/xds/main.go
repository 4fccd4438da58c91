// Command xds measures how fast the sidecar applies dynamic configuration
// from go-control-plane's ADS server (pkg/server/v3 with a snapshot cache,
// started here on loopback), and that traffic is not disturbed meanwhile:
//
//   - cds: 10,000 EDS clusters of one endpoint each, from the snapshot
//     being set to every cluster active, the heap per cluster once
//     settled, then one of them changed (a fresh sidecar per run); and a
//     sidecar whose first response holds them, from its start to /ready;
//   - eds: one cluster's load assignment of 10,000 endpoints, then a
//     one-endpoint change to it, from the snapshot being set to the
//     cluster's membership_total showing it;
//   - rds: a route table of 10,000 virtual hosts, then a one-host change,
//     from the snapshot being set to the route configuration's
//     update_success;
//   - churn: steady keep-alive load through a listener, route, cluster and
//     endpoints that all came over ADS while 100 updates (clusters,
//     endpoints, routes not on the loaded path, and some re-pointing the
//     loaded route to an equivalent cluster) arrive: failed requests must
//     be zero, or the program fails.
//
// Times are medians with the spread of several runs; each includes the
// management server's building and marshalling of its response, which is
// printed apart ("server sent" is when its response had been written).
// The sidecar's CPU time is printed beside them: on a shared machine the
// elapsed times stretch with the load, the CPU time much less.
// Everything runs on 127.0.0.0/8; every wait and loop is bounded.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	var (
		bin    = flag.String("sidecar", "bin/sidecar", "the sidecar binary")
		reps   = flag.Int("reps", 3, "runs of each measurement")
		procs  = flag.Int("procs", 1, "the sidecar's GOMAXPROCS")
		n      = flag.Int("n", 10000, "clusters, endpoints and virtual hosts")
		only   = flag.String("only", "cds,eds,rds,churn", "the measurements to run")
		update = flag.Int("updates", 100, "updates under load in the churn measurement")
		pairs  = flag.Int("edspairs", 1, "one-endpoint changes (an add and a remove) per eds run, after its full update")
		prof   = flag.String("profile", "", "a directory for the sidecar's CPU profile of the cds update and its heap profile after it ")
	)
	flag.Parse()
	if *reps < 1 || *reps > 20 || *n < 1 || *n > 50000 || *update < 1 || *update > 1000 || *procs < 1 || *pairs < 1 || *pairs > 100 {
		fmt.Fprintln(os.Stderr, "xds bench: -reps 1..20, -n 1..50000, -updates 1..1000, -procs >= 1, -edspairs 1..100")
		os.Exit(2)
	}
	b := bench{bin: *bin, reps: *reps, procs: *procs, n: *n, updates: *update, profile: *prof, edsPairs: *pairs}
	fmt.Printf("sidecar %s, GOMAXPROCS=%d, n=%d, %d runs each\n", b.bin, b.procs, b.n, b.reps)
	var failed error
	for _, m := range strings.Split(*only, ",") {
		var err error
		switch m {
		case "cds":
			err = b.cds()
		case "eds":
			err = b.eds()
		case "rds":
			err = b.rds()
		case "churn":
			err = b.churn()
		default:
			err = fmt.Errorf("unknown measurement %q", m)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "xds bench: %s: %v\n", m, err)
			failed = errors.Join(failed, err)
		}
	}
	if failed != nil {
		os.Exit(1)
	}
}

// bench holds the flags.
type bench struct {
	bin            string
	reps, procs, n int
	updates        int
	profile        string
	// edsPairs are the one-endpoint changes of each eds run: 1 measures
	// them right after the full update, whose collection is then still
	// owed; more give their steady cost.
	edsPairs int
}

// start starts a management server serving cfg and a sidecar reading it,
// and waits until the sidecar is ready.
func (b bench) start(cfg config) (*controlPlane, *sidecar, error) {
	cp, err := startControlPlane()
	if err != nil {
		return nil, nil, err
	}
	if err := cp.set(cfg); err != nil {
		cp.stop()
		return nil, nil, err
	}
	s, err := launch(b.bin, b.procs, cp.port)
	if err != nil {
		cp.stop()
		return nil, nil, err
	}
	if err := s.waitReady(60 * time.Second); err != nil {
		s.stop()
		cp.stop()
		return nil, nil, fmt.Errorf("ready: %w", err)
	}
	return cp, s, nil
}

// sample is a set of durations of one figure.
type sample []time.Duration

// String is the median, and the spread as min..max.
func (s sample) String() string {
	if len(s) == 0 {
		return "-"
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return fmt.Sprintf("median %s (min %s, max %s, %d runs)", round(c[len(c)/2]), round(c[0]), round(c[len(c)-1]), len(c))
}

// round keeps three significant figures or so.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	default:
		return d.Round(10 * time.Microsecond)
	}
}

// loadAverage is the first field of /proc/loadavg, for the report.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
