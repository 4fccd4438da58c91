package loadreport

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// RetryDelay is Envoy's delay before a lost load reporting stream is
// opened again (LoadStatsReporterImpl's RETRY_DELAY_MS): fixed, not a
// backoff.
const RetryDelay = 5 * time.Second

// SendAllClustersFeature is the client feature the node of every request
// advertises: the reporter understands send_all_clusters.
const SendAllClustersFeature = "envoy.lrs.supports_send_all_clusters"

// minInterval bounds how often reports go out. Envoy arms its timer with
// whatever load_reporting_interval says, so a server that leaves it unset
// (0) gets reports back to back; here they are at least this far apart.
const minInterval = 10 * time.Millisecond

// Clusters are the active clusters, as the reporter reads them.
type Clusters interface {
	// Cluster returns the named active cluster, nil when there is none.
	Cluster(name string) *cluster.Cluster
	// Clusters returns every active cluster.
	Clusters() []*cluster.Cluster
}

// Options configure a Reporter.
type Options struct {
	// Conn is the channel to the load reporting server (required).
	Conn grpc.ClientConnInterface
	// CallContext prepares each stream's context (initial metadata); nil
	// uses the parent context as is.
	CallContext func(context.Context) (context.Context, context.CancelFunc)
	// Node identifies this proxy; every request carries it, with
	// SendAllClustersFeature added to its client features (required).
	Node *corev3.Node
	// Clusters are the clusters reported on (required).
	Clusters Clusters
	// Stats is the root scope: load_reporter.* is created in it
	// (required).
	Stats *stats.Store
	// Log receives stream warnings.
	Log logr.Logger
	// Flag reads a runtime feature flag (see localityReported); nil
	// takes every flag's default.
	Flag func(key string, def bool) bool
	// Now is the clock of the measured intervals; nil means time.Now
	// (whose readings carry the monotonic clock).
	Now func() time.Time
	// RetryDelay overrides Envoy's RetryDelay (tests); zero keeps it.
	RetryDelay time.Duration
}

// Reporter streams load reports to the load reporting server, as Envoy's
// LoadStatsReporterImpl. Its state belongs to the goroutine that runs the
// stream.
type Reporter struct {
	opts Options
	node *corev3.Node
	st   reporterStats

	// message is the server's last response: the clusters it wants and
	// the interval. It outlives a stream, as Envoy's: a new stream
	// reports on the same clusters at once.
	message *lrsv3.LoadStatsResponse
	// tracked are the clusters being reported on, each with the start
	// of its measured interval.
	tracked map[string]time.Time

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	started bool
}

// reporterStats are Envoy's load_reporter.* counters, counted where
// Envoy counts them: requests per response received, responses per
// report sent (the names are the server's view).
type reporterStats struct {
	requests, responses, errors, retries *stats.Counter
}

// New prepares a reporter; nothing is sent before Start.
func New(o Options) (*Reporter, error) {
	switch {
	case o.Conn == nil:
		return nil, errors.New("a gRPC channel is required")
	case o.Node == nil:
		return nil, errors.New("a node is required")
	case o.Clusters == nil:
		return nil, errors.New("the clusters are required")
	case o.Stats == nil:
		return nil, errors.New("a stats store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = RetryDelay
	}
	node := proto.Clone(o.Node).(*corev3.Node)
	node.ClientFeatures = append(node.ClientFeatures, SendAllClustersFeature)
	ctx, cancel := context.WithCancel(context.Background())
	return &Reporter{
		opts: o,
		node: node,
		st: reporterStats{
			requests:  o.Stats.Counter("load_reporter.requests"),
			responses: o.Stats.Counter("load_reporter.responses"),
			errors:    o.Stats.Counter("load_reporter.errors"),
			retries:   o.Stats.Counter("load_reporter.retries"),
		},
		tracked: map[string]time.Time{},
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}, nil
}

// Start opens the stream in a goroutine. It never blocks on the server.
func (r *Reporter) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.started:
		return errors.New("the load reporter is already started")
	case r.ctx.Err() != nil:
		return errors.New("the load reporter is closed")
	}
	r.started = true
	go r.run()
	return nil
}

// Close ends the stream and waits for its goroutine. It is idempotent
// and safe before Start.
func (r *Reporter) Close() error {
	r.mu.Lock()
	r.cancel()
	started := r.started
	r.started = true // no Start after Close
	r.mu.Unlock()
	if started {
		<-r.done
	}
	return nil
}

// run keeps a stream open until Close, opening a lost one again after
// the retry delay.
func (r *Reporter) run() {
	defer close(r.done)
	for {
		failed := r.stream()
		if r.ctx.Err() != nil {
			return
		}
		if failed {
			r.st.errors.Inc()
		}
		r.opts.Log.Info("load reporter: stream will be opened again", "in", r.opts.RetryDelay.String())
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(r.opts.RetryDelay):
		}
		r.st.retries.Inc()
	}
}

// received is one Recv of the stream.
type received struct {
	resp *lrsv3.LoadStatsResponse
	err  error
}

// stream runs one stream: the first report at once, a report whenever
// the interval passes, a new reporting period with each response. It
// returns when the stream ends, reporting whether it failed (a server
// that closes the stream with an OK status has not).
func (r *Reporter) stream() (failed bool) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	if r.opts.CallContext != nil {
		var cancelCall context.CancelFunc
		ctx, cancelCall = r.opts.CallContext(ctx)
		defer cancelCall()
	}
	st, err := lrsv3.NewLoadReportingServiceClient(r.opts.Conn).StreamLoadStats(ctx)
	if err != nil {
		logging.Warning(r.opts.Log, "load reporter: cannot open the stream", "error", err.Error())
		return true
	}
	recv := make(chan received)
	go func() {
		for {
			resp, err := st.Recv()
			select {
			case recv <- received{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	report := func() error {
		if err := st.Send(r.request()); err != nil {
			return err
		}
		r.st.responses.Inc()
		if r.message != nil {
			r.startPeriod(timer)
		}
		return nil
	}
	if err := report(); err != nil {
		return r.closed(ctx, err)
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			if err := report(); err != nil {
				return r.closed(ctx, err)
			}
		case m := <-recv:
			if m.err != nil {
				return r.closed(ctx, m.err)
			}
			r.message = m.resp
			r.startPeriod(timer)
			r.st.requests.Inc()
		}
	}
}

// closed logs the end of a stream and reports whether it failed: an OK
// status (io.EOF) is a graceful close, which Envoy does not count as an
// error.
func (r *Reporter) closed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, io.EOF) || status.Code(err) == codes.OK {
		r.opts.Log.V(1).Info("load reporter: stream closed gracefully")
		return false
	}
	logging.Warning(r.opts.Log, "load reporter: stream closed", "error", err.Error())
	return true
}

// startPeriod starts a reporting period from the last response, as
// Envoy's startLoadReportPeriod: the clusters it names (all the active
// ones with send_all_clusters) are tracked; those tracked already keep
// their interval's start and counts, the new ones start now with their
// counts latched away; the timer is armed for the next report.
func (r *Reporter) startPeriod(timer *time.Timer) {
	var names []string
	if r.message.GetSendAllClusters() {
		for _, c := range r.opts.Clusters.Clusters() {
			names = append(names, c.Name())
		}
	} else {
		names = r.message.GetClusters()
	}
	tracked := make(map[string]time.Time, len(names))
	for _, name := range names {
		if start, ok := r.tracked[name]; ok {
			tracked[name] = start
			continue
		}
		tracked[name] = r.opts.Now()
		if c := r.opts.Clusters.Cluster(name); c != nil {
			for _, h := range c.Hosts() {
				h.Stats.Latch()
			}
			c.LatchDrops()
		}
	}
	r.tracked = tracked
	interval := max(r.message.GetLoadReportingInterval().AsDuration(), minInterval)
	timer.Reset(interval)
}

// trackedNames are the tracked clusters' names, sorted so that reports
// list them in a stable order.
func (r *Reporter) trackedNames() []string {
	names := make([]string, 0, len(r.tracked))
	for name := range r.tracked {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
