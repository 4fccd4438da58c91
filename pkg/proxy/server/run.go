package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// shutdownGrace bounds how long shutdown waits for admin responses in
// flight (the answer to /quitquitquit among them).
const shutdownGrace = 5 * time.Second

// Run binds the admin and the listeners, serves until a signal, /quitquitquit
// or ctx ends it, then shuts down cleanly. A nil return means a clean exit.
// With --mode init_only it returns as soon as the server is LIVE.
func (s *Server) Run(ctx context.Context, adminHandler http.Handler) error {
	s.life.setPhase(phaseInitializing)
	if err := s.prepareProcess(); err != nil {
		return err
	}
	// Signals are subscribed before anything is bound, so a SIGTERM that
	// arrives during start-up still means a clean shutdown.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	adminSrv, err := s.startAdmin(adminHandler)
	if err != nil {
		return err
	}
	// The overload manager runs before the listeners accept anything.
	s.startOverload()
	// DNS clusters start resolving; the listeners are bound at once (a
	// port clash fails start-up), but accept only once the clusters are
	// initialised, as Envoy's workers start after its cluster manager.
	s.clusters.Start()
	// The ADS stream opens now: the EDS clusters warm with it.
	if s.ads != nil {
		if err := s.ads.Start(); err != nil {
			s.shutdown(adminSrv)
			return fmt.Errorf("ads: %w", err)
		}
		s.eds.start()
	}
	// So do the config sources' own streams.
	if err := s.streams.start(); err != nil {
		s.shutdown(adminSrv)
		return fmt.Errorf("discovery: %w", err)
	}
	// The load reports start with the clusters they report on.
	if s.loadReports != nil {
		if err := s.loadReports.Start(); err != nil {
			s.shutdown(adminSrv)
			return fmt.Errorf("cluster_manager.load_stats_config: %w", err)
		}
	}
	// And the clusters' file is read.
	if s.cdsFile != nil {
		if err := s.cdsFile.Start(); err != nil {
			s.shutdown(adminSrv)
			return fmt.Errorf("cluster discovery: %w", err)
		}
	}
	if err := s.bindListeners(); err != nil {
		s.shutdown(adminSrv)
		return err
	}
	if !s.waitClusters(ctx, sigs) {
		s.shutdown(adminSrv)
		return nil
	}
	if err := s.serveListeners(); err != nil {
		s.shutdown(adminSrv)
		return err
	}
	if !s.waitDiscovery(ctx, sigs) {
		s.shutdown(adminSrv)
		return nil
	}
	s.life.setPhase(phaseInitialized)
	s.hotRestartServing()
	s.startStats()
	s.publishRuntimeStats()
	s.log.Info("starting main dispatch loop")

	if s.opts.Mode == options.ModeInitOnly {
		s.shutdown(adminSrv)
		return nil
	}
	s.releaseStartupMemory()
	s.serveUntilExit(ctx, sigs)
	s.shutdown(adminSrv)
	return nil
}

// serveUntilExit serves until the process is to exit: at once on SIGINT,
// /quitquitquit or the end of ctx, as Envoy; on SIGTERM after the
// termination drain (see terminationDrain), or at once when
// --termination-drain-time-s is 0. It logs the reason.
func (s *Server) serveUntilExit(ctx context.Context, sigs <-chan os.Signal) {
	var term *terminationDrain
	defer func() { term.stop() }()
	for {
		select {
		case <-ctx.Done():
			s.log.Info("shutting down: context ended")
		case <-s.quit:
			s.log.Info("shutting down: quit requested through the admin")
		case <-term.ended():
			s.log.Info("shutting down: the termination drain window ended", "window", s.opts.TerminationDrainTime.String())
		case <-term.polled():
			if !s.noConnectionsLeft(term) {
				continue
			}
			s.log.Info("shutting down: no downstream connection left during the termination drain")
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGUSR1:
				if err := s.ReopenLogs(); err != nil {
					s.log.Error(err, "reopening logs after SIGUSR1")
				}
				continue
			case sig == syscall.SIGTERM && term != nil:
				s.log.Info("termination drain already under way; signal ignored", "signal", sig.String())
				continue
			case sig == syscall.SIGTERM && s.opts.TerminationDrainTime > 0:
				term = s.startTermination()
				continue
			}
			s.log.Info("shutting down: caught signal", "signal", sig.String())
		}
		return
	}
}

// prepareProcess applies the process-wide options: base id, core dumps and
// mutex tracing.
func (s *Server) prepareProcess() error {
	baseID := s.opts.BaseID
	if s.opts.UseDynamicBaseID {
		// Without shared-memory hot restart there is nothing to collide with;
		// the process id is unique on the machine while we run.
		baseID = uint32(os.Getpid())
	}
	// Envoy's wording, which operators grep for.
	s.log.Info(fmt.Sprintf("initializing epoch %d (base id=%d, hot restart version=%s)",
		s.opts.RestartEpoch, baseID, s.opts.HotRestartVersion()))
	if p := s.opts.BaseIDPath; p != "" {
		if err := os.WriteFile(p, []byte(strconv.FormatUint(uint64(baseID), 10)), 0o644); err != nil {
			return fmt.Errorf("writing --base-id-path: %w", err)
		}
	}
	if err := s.startHotRestart(baseID); err != nil {
		return err
	}
	if s.opts.EnableCoreDump {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("enabling core dumps: %w", err)
		}
		// A fatal Go error then aborts with SIGABRT, which dumps core.
		debug.SetTraceback("crash")
	}
	if s.opts.EnableMutexTracing {
		goruntime.SetMutexProfileFraction(1)
	}
	return nil
}

// startAdmin binds the admin listener (when the bootstrap has one), writes
// --admin-address-path and serves the admin handler on HTTP/1.1 and h2c.
func (s *Server) startAdmin(h http.Handler) (*http.Server, error) {
	a := s.boot.GetAdmin().GetAddress()
	if a.GetSocketAddress() == nil && a.GetPipe() == nil {
		if s.opts.AdminAddressPath != "" {
			logging.Warning(s.log, "no admin address is configured; --admin-address-path is not written")
		}
		return nil, nil
	}
	ln, addr, err := listenAdmin(a, s.adminCfg.sockopts)
	if err != nil {
		return nil, err
	}
	s.hot.setAdminListener(ln)
	served := ln
	if s.overload != nil && s.adminCfg.enforceGlobal {
		// As Envoy's admin listener, it counts against the global
		// connection limit unless admin.ignore_global_conn_limit, though
		// no overload action applies to it.
		served = &globalLimitedListener{Listener: ln, overload: s.overload, overflow: s.statsRT.admin.lnGlobalCxOverflow}
	}
	s.log.Info("admin address: " + addr)
	if p := s.opts.AdminAddressPath; p != "" {
		// Envoy keeps running when the file cannot be written; so do we.
		if err := os.WriteFile(p, []byte(addr), 0o644); err != nil {
			logging.Critical(s.log, "cannot open admin address output file for writing", "path", p, "error", err.Error())
		}
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           s.statsRT.admin.wrap(h),
		ConnContext:       s.statsRT.admin.connContext,
		ConnState:         s.statsRT.admin.connState,
		Protocols:         protocols,
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(logrWriter{s.AdminLogger()}, "", 0),
	}
	go func() {
		if err := srv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.AdminLogger().Error(err, "admin listener stopped")
		}
	}()
	return srv, nil
}

// startListeners binds and serves the listeners without waiting for the
// clusters (Run waits between the two).
func (s *Server) startListeners() error {
	if err := s.bindListeners(); err != nil {
		return err
	}
	return s.serveListeners()
}

// bindListeners binds every static listener before serving any, so a
// port clash fails start-up without a half-started server (shutdown then
// closes the ones bound).
func (s *Server) bindListeners() error {
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	for _, bl := range s.lset.active {
		bl.SetSocketSource(s.inheritedSockets)
		if err := bl.Bind(); err != nil {
			return err
		}
	}
	return nil
}

// waitClusters waits until the clusters are initialised (DNS clusters
// with wait_for_warm_on_init: their first resolution; EDS clusters: their
// first load assignment), the server staying INITIALIZING meanwhile. A shutdown asked for in the meantime ends the
// wait: false.
func (s *Server) waitClusters(ctx context.Context, sigs <-chan os.Signal) bool {
	if !s.waitInit(ctx, sigs, s.clusters.Warmed(), "waiting for the clusters to warm (DNS resolutions, EDS load assignments) before serving") {
		return false
	}
	// Then the runtime layers from a management server, as Envoy starts
	// RTDS once its static clusters are initialised and CDS once RTDS is.
	if s.rtdsReady != nil && !s.waitInit(ctx, sigs, s.rtdsReady, "waiting for the runtime layers (RTDS)") {
		return false
	}
	if s.cds == nil {
		return true
	}
	// Then the first cluster discovery response (or its initial fetch
	// timeout), and the warming of the clusters it brought.
	if !s.waitInit(ctx, sigs, s.cds.Ready(), "waiting for the first cluster discovery response") {
		return false
	}
	return s.waitInit(ctx, sigs, s.clusters.DiscoveredWarmed(), "waiting for the discovered clusters to warm")
}

// waitDiscovery waits for the first listener discovery response (or its
// initial_fetch_timeout), the server staying INITIALIZING meanwhile, as
// Envoy's init manager waits for its LDS target.
func (s *Server) waitDiscovery(ctx context.Context, sigs <-chan os.Signal) bool {
	if s.ldsReady != nil && !s.waitInit(ctx, sigs, s.ldsReady, "waiting for the first listener discovery response") {
		return false
	}
	// Then the warming of the listeners (their route configurations), as
	// Envoy's init manager waits for its listeners' RDS targets.
	return s.waitInit(ctx, sigs, s.listenersWarm(), "waiting for the listeners' route configurations")
}

// listenersWarm is closed once the listeners in service now are warm.
func (s *Server) listenersWarm() <-chan struct{} {
	s.lset.mu.Lock()
	var waits []<-chan struct{}
	for _, bl := range s.lset.active {
		waits = append(waits, bl.warm.ready())
	}
	s.lset.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, w := range waits {
			<-w
		}
	}()
	return done
}

// waitInit waits until ready is closed, logging msg if it is not yet. A
// shutdown asked for in the meantime ends the wait: false.
func (s *Server) waitInit(ctx context.Context, sigs <-chan os.Signal, ready <-chan struct{}, msg string) bool {
	select {
	case <-ready:
		return true
	default:
	}
	s.log.Info(msg)
	for {
		select {
		case <-ready:
			return true
		case <-ctx.Done():
			s.log.Info("shutting down: context ended")
		case <-s.quit:
			s.log.Info("shutting down: quit requested through the admin")
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				if err := s.ReopenLogs(); err != nil {
					s.log.Error(err, "reopening logs after SIGUSR1")
				}
				continue
			}
			s.log.Info("shutting down: caught signal", "signal", sig.String())
		}
		return false
	}
}

// serveListeners starts the bound listeners' network filters and workers,
// and feeds server.total_connections. Then the listeners from discovery
// are read and started: like Envoy's first LDS fetch, this happens before
// the server is LIVE.
func (s *Server) serveListeners() error {
	s.lset.mu.Lock()
	for _, bl := range s.lset.active {
		s.serve(bl)
	}
	s.lset.mu.Unlock()
	s.lset.stats.WorkersStarted.Set(1)
	s.AddConnectionSource(s.activeConnections)
	if s.lds != nil {
		if err := s.lds.Start(); err != nil {
			return fmt.Errorf("listener discovery: %w", err)
		}
	}
	if err := s.subscribeListenersADS(); err != nil {
		return fmt.Errorf("listener discovery: %w", err)
	}
	return nil
}

// serve starts a bound listener's workers, once it is warm: a listener
// whose routes come from route discovery waits for their first
// configurations (or their initial fetch timeouts), its connections
// waiting in the socket's backlog meanwhile.
func (s *Server) serve(bl *builtListener) {
	ready := bl.warm.ready()
	select {
	case <-ready:
		s.startServing(bl)
	default:
		s.log.Info("listener warming: waiting for its init targets (route configurations, secrets, JWKS fetches)", "listener", bl.Name(), "targets", strings.Join(bl.warm.unready(), ","))
		go func() {
			<-ready
			s.startServing(bl)
		}()
	}
}

// startServing starts a warm listener's workers.
func (s *Server) startServing(bl *builtListener) {
	go func() { _ = bl.Serve() }() // returns nil once the listener stops
	var addrs []string
	for _, a := range bl.Addresses() {
		addrs = append(addrs, listener.AddressString(a.GetSocketAddress()))
	}
	s.log.Info("listener started", "listener", bl.Name(), "address", strings.Join(addrs, ","),
		"workers", s.opts.Concurrency, "direction", bl.Direction().String())
}

// shutdown stops accepting, lets admin responses in flight finish (within
// shutdownGrace), and flushes every log.
func (s *Server) shutdown(adminSrv *http.Server) {
	s.life.startShutdown()
	s.closeHotRestart()
	if s.lds != nil {
		_ = s.lds.Close() // no update may add a listener while they close
	}
	if s.cdsFile != nil {
		_ = s.cdsFile.Close()
	}
	if s.ads != nil {
		_ = s.ads.Close()
	}
	s.streams.close()
	_ = s.loadReports.Close()
	if s.ldsStream != nil {
		_ = s.ldsStream.Close() // when shutdown came before it was subscribed (closing twice is harmless)
	}
	s.secrets.close()
	s.closeListeners()
	s.stopOverload() // after the listeners: nothing consults it any more
	// The last flush, with every request counted now that the listeners
	// are closed, and the end of the dashboard streams, which would
	// otherwise hold the admin shutdown below for its whole grace period.
	// Before the clusters close, as in Envoy: sinks that export through a
	// cluster (statsd over TCP, OpenTelemetry) still reach it.
	s.stopStats()
	s.clusters.Close() // after the listeners: no request needs an upstream any more
	_ = s.outlierEvents.Close()
	if adminSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		if err := adminSrv.Shutdown(ctx); err != nil {
			_ = adminSrv.Close()
		}
		cancel()
	}
	// The admin's loggers last: the admin served until now. A gRPC
	// logger's last batch is lost, as its cluster is closed already.
	if c, ok := s.adminLog.(accesslog.Closer); ok {
		_ = c.Close()
	}
	for _, fw := range s.openAccessLogs() {
		_ = fw.Close()
	}
	s.log.Info("exiting")
	_ = s.logs.Flush()
}

// logrWriter sends net/http's server error log (malformed requests, TLS
// handshake failures) to a component logger at debug level: such errors are
// the client's, not the server's.
type logrWriter struct{ log logr.Logger }

func (w logrWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
