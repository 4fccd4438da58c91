package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestBreakerEvents: with a dashboard sink, a subscriber gets an event set
// per flush, naming the static clusters with their circuit-breaker limit;
// stopping the stats ends the stream.
func TestBreakerEvents(t *testing.T) {
	s, _ := mustBuildServer(t, `
stats_flush_on_admin: true
stats_sinks: [{name: envoy.stat_sinks.hystrix, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.HystrixSink, num_buckets: 3}}]
static_resources:
  clusters:
  - name: backend
    circuit_breakers: {thresholds: [{priority: HIGH, max_pending_requests: 9}, {max_pending_requests: 77}]}
  - name: other
`)
	if !s.BreakerEventsEnabled() {
		t.Fatal("BreakerEventsEnabled = false with a hystrix sink")
	}
	events, cancel := s.SubscribeBreakerEvents()
	defer cancel()
	s.FlushForAdmin()
	var set string
	select {
	case b := <-events:
		set = string(b)
	case <-time.After(5 * time.Second):
		t.Fatal("no event set after a flush")
	}
	for _, want := range []string{
		`"type": "HystrixCommand", "name": "backend"`,
		`"propertyValue_executionIsolationSemaphoreMaxConcurrentRequests": 77`,
		`"name": "other"`,
		`"propertyValue_queueSizeRejectionThreshold": 1024`,
		`"propertyValue_metricsRollingStatisticalWindowInMilliseconds": 5000`,
	} {
		if !strings.Contains(set, want) {
			t.Errorf("event set lacks %s:\n%s", want, set)
		}
	}
	s.stopStats()
	if _, ok := <-events; ok {
		t.Error("the stream is still open after the stats stopped")
	}
}

func TestNoBreakerEventsWithoutSink(t *testing.T) {
	s, _ := mustBuildServer(t, "{}")
	if s.BreakerEventsEnabled() {
		t.Error("BreakerEventsEnabled = true without a hystrix sink")
	}
	events, cancel := s.SubscribeBreakerEvents()
	defer cancel()
	if _, ok := <-events; ok {
		t.Error("a subscription without a sink is open")
	}
}

// TestDialCluster: a statsd cluster's endpoints are tried in turn, so a
// dead one is skipped.
func TestDialCluster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	_ = dead.Close()
	endpoint := func(port int) string {
		return fmt.Sprintf(`{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}`, port)
	}
	s, _ := mustBuildServer(t, fmt.Sprintf(`static_resources: {clusters: [
		{name: statsd, connect_timeout: 1s, load_assignment: {cluster_name: statsd, endpoints: [{lb_endpoints: [%s, %s]}]}},
		{name: empty}]}`, endpoint(deadPort), endpoint(ln.Addr().(*net.TCPAddr).Port)))

	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			accepted <- struct{}{}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 2 { // whichever endpoint comes first, the live one answers
		c, err := s.dialCluster(ctx, "statsd")
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
		<-accepted
	}
	for name, want := range map[string]string{"nowhere": `unknown cluster "nowhere"`, "empty": `cluster "empty" has no endpoint`} {
		if _, err := s.dialCluster(ctx, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dial %s: %v, want %q", name, err, want)
		}
	}
}
