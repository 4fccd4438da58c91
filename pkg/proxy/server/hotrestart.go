package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/hotrestart"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// hotRestartStatsInterval is how often a child merges its parent's stats
// while the parent drains (Envoy merges at each stats flush).
const hotRestartStatsInterval = time.Second

// hotRestart is the process's side of the hot-restart channel: the socket
// it answers its own child on, and the connection to its parent while one
// drains.
type hotRestart struct {
	mu       sync.Mutex
	parent   *hotrestart.Parent // answering the next epoch
	child    *hotrestart.Child  // connected to the previous epoch
	adminLn  net.Listener       // closed when the child asks
	merger   *hotrestart.StatsMerger
	original time.Time // start of epoch 0
	stop     chan struct{}
	stopOnce sync.Once
}

// startHotRestart connects to the parent (--restart-epoch > 0) and takes
// its admin address over, then listens for a child of the next epoch. With
// --disable-hot-restart it does nothing.
func (s *Server) startHotRestart(baseID uint32) error {
	h := &hotRestart{original: s.start, stop: make(chan struct{}), merger: hotrestart.NewStatsMerger()}
	s.hot = h
	if s.opts.DisableHotRestart {
		return nil
	}
	version := s.opts.HotRestartVersion()
	generation := uint64(1)
	if s.opts.RestartEpoch > 0 {
		name := hotrestart.SocketName(s.opts.SocketPath, baseID, s.opts.RestartEpoch-1)
		child, err := hotrestart.Connect(name, version)
		var mismatch *hotrestart.VersionMismatchError
		switch {
		case errors.As(err, &mismatch):
			return err
		case err != nil && s.opts.SkipHotRestartOnNoParent:
			logging.Warning(s.log, "no hot-restart parent; starting as a fresh process (--skip-hot-restart-on-no-parent)", "error", err.Error())
		case err != nil:
			return err
		default:
			s.log.Info("hot restart: connected to the parent", "socket", name)
			h.child = child
			h.original = child.OriginalStart
			generation = child.ParentGeneration + 1
			if err := child.ShutdownAdmin(); err != nil {
				child.Close()
				return fmt.Errorf("hot restart: asking the parent to close its admin listener: %w", err)
			}
		}
	}
	s.stats.Gauge("server.hot_restart_generation").Set(int64(generation))
	name := hotrestart.SocketName(s.opts.SocketPath, baseID, s.opts.RestartEpoch)
	p, err := hotrestart.Listen(hotrestart.ParentConfig{Name: name, Mode: s.opts.SocketMode, Version: version,
		OriginalStart: h.original, Generation: generation}, hotRestartHost{s}, s.log.WithName("hot_restart"))
	if err != nil {
		if h.child != nil {
			h.child.Close()
		}
		return fmt.Errorf("unable to bind the hot-restart socket %s: %w (see --base-id and --socket-path)", name, err)
	}
	h.parent = p
	return nil
}

// originalStart is when epoch 0 started.
func (s *Server) originalStart() time.Time {
	if s.hot == nil {
		return s.start
	}
	return s.hot.original
}

// setAdminListener records the admin socket a child may ask to close.
func (h *hotRestart) setAdminListener(ln net.Listener) {
	if h == nil {
		return // a server not started by Run
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.adminLn = ln
}

// inheritedSockets is the listeners' socket source: the parent's sockets,
// while a parent is connected.
func (s *Server) inheritedSockets(network, address string, n int) []net.Listener {
	if s.hot == nil || s.hot.child == nil {
		return nil
	}
	socks, err := s.hot.child.ListenSockets(network, address, n)
	if err != nil {
		s.log.Error(err, "hot restart: asking the parent for a listening socket", "address", address)
		return nil
	}
	if socks != nil {
		s.log.Info("hot restart: took the parent's listening socket over", "address", address)
	}
	return socks
}

// hotRestartServing runs once this process serves: the parent stops
// accepting and drains, its stats are merged until
// --parent-shutdown-time-s, and then it is told to exit.
func (s *Server) hotRestartServing() {
	h := s.hot
	if h == nil || h.child == nil {
		return
	}
	if err := h.child.DrainParent(); err != nil {
		s.log.Error(err, "hot restart: asking the parent to drain")
	}
	go s.watchParent(h)
}

// watchParent merges the parent's stats until the parent shutdown time,
// then terminates the parent.
func (s *Server) watchParent(h *hotRestart) {
	deadline := time.NewTimer(s.opts.ParentShutdownTime)
	defer deadline.Stop()
	tick := time.NewTicker(hotRestartStatsInterval)
	defer tick.Stop()
	s.mergeParentStats(h)
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			if !s.mergeParentStats(h) {
				s.parentGone(h)
				return
			}
		case <-deadline.C:
			s.mergeParentStats(h)
			s.log.Info("hot restart: parent shutdown time reached; terminating the parent", "parent_shutdown_time", s.opts.ParentShutdownTime.String())
			if err := h.child.TerminateParent(); err != nil {
				s.log.Error(err, "hot restart: terminating the parent")
			}
			s.parentGone(h)
			return
		}
	}
}

// mergeParentStats merges the parent's stats; false once the parent is
// unreachable.
func (s *Server) mergeParentStats(h *hotRestart) bool {
	counters, gauges, err := h.child.Stats()
	if err != nil {
		return false
	}
	if s.opts.SkipHotRestartParentStats {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.merger.Merge(storeTarget{s}, counters, gauges)
	return true
}

// parentGone takes the parent's gauges out and closes the connection.
func (s *Server) parentGone(h *hotRestart) {
	h.mu.Lock()
	h.merger.ParentGone(storeTarget{s})
	h.mu.Unlock()
	h.child.Close()
	s.log.Info("hot restart: the parent is gone")
}

// closeHotRestart stops answering children and watching the parent.
func (s *Server) closeHotRestart() {
	h := s.hot
	if h == nil {
		return
	}
	h.stopOnce.Do(func() { close(h.stop) })
	if h.parent != nil {
		h.parent.Close()
	}
	if h.child != nil {
		h.child.Close()
	}
}

// storeTarget adds imported stats into the server's store.
type storeTarget struct{ s *Server }

func (t storeTarget) AddCounter(name string, d uint64) { t.s.stats.Counter(name).Add(d) }
func (t storeTarget) AddGauge(name string, d int64)    { t.s.stats.Gauge(name).Add(d) }

// hotRestartHost is the server as the parent side of a hot restart sees
// it.
type hotRestartHost struct{ s *Server }

func (h hotRestartHost) ListenSockets(network, address string, n int) []*os.File {
	for _, bl := range h.s.activeListeners() {
		if files := bl.DupSockets(network, address, n); files != nil {
			return files
		}
	}
	return nil
}

func (h hotRestartHost) ShutdownAdmin() {
	hr := h.s.hot
	hr.mu.Lock()
	ln := hr.adminLn
	hr.adminLn = nil
	hr.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

func (h hotRestartHost) Stats() (map[string]uint64, map[string]int64) {
	st := h.s.stats
	counters := map[string]uint64{}
	// A walk rather than a lookup by name, which would allocate every
	// declared counter (see stats.Scope.DeclareCounter).
	_ = st.Visit(stats.VisitOptions{Type: stats.TypeCounters}, func(c *stats.Stat) error {
		counters[string(c.Name)] = c.Counter.Value()
		return nil
	})
	gauges := map[string]int64{}
	for _, name := range st.GaugeNames() {
		if hotrestart.GaugeImported(name) {
			gauges[name] = st.Gauge(name).Value()
		}
	}
	return counters, gauges
}

// DrainListeners stops accepting (the child owns the sockets now) and
// starts every listener's drain sequence for --drain-time-s with
// --drain-strategy, as Envoy's parent does.
func (h hotRestartHost) DrainListeners() {
	s := h.s
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	for _, bl := range s.lset.active {
		bl.Drain().Start()
	}
	s.stopListenersLocked(stopAll)
}

func (h hotRestartHost) Terminate() { h.s.Quit() }
