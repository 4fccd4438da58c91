package healthcheck

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datacorev3 "github.com/envoyproxy/go-control-plane/envoy/data/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// eventLog writes a checker's HealthCheckEvents to event_log_path and to
// each file sink of event_logger, one JSON object a line, with the
// default-valued fields printed as Envoy prints them. A nil eventLog logs
// nothing.
type eventLog struct {
	kind    datacorev3.HealthCheckerType
	cluster string
	now     func() time.Time

	mu    sync.Mutex
	files []*os.File
}

// openEventLog opens (appends to) the log files; one that cannot be
// opened is an error, and the others are closed.
func openEventLog(paths []string, kind Kind, cluster string, now func() time.Time) (*eventLog, error) {
	l := &eventLog{kind: checkerType(kind), cluster: cluster, now: now}
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			l.close()
			return nil, err
		}
		l.files = append(l.files, f)
	}
	return l, nil
}

// checkerType is the event's health_checker_type of a kind.
func checkerType(k Kind) datacorev3.HealthCheckerType {
	switch k {
	case KindTCP:
		return datacorev3.HealthCheckerType_TCP
	case KindGRPC:
		return datacorev3.HealthCheckerType_GRPC
	}
	return datacorev3.HealthCheckerType_HTTP
}

func (l *eventLog) ejectUnhealthy(addr string, ft datacorev3.HealthCheckFailureType, status int) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_EjectUnhealthyEvent{
		EjectUnhealthyEvent: &datacorev3.HealthCheckEjectUnhealthy{FailureType: ft, HttpStatusCode: uint32(status)}}})
}

func (l *eventLog) unhealthy(addr string, ft datacorev3.HealthCheckFailureType, first bool, status int) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_HealthCheckFailureEvent{
		HealthCheckFailureEvent: &datacorev3.HealthCheckFailure{FailureType: ft, FirstCheck: first, HttpStatusCode: uint32(status)}}})
}

func (l *eventLog) addHealthy(addr string, first bool) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_AddHealthyEvent{
		AddHealthyEvent: &datacorev3.HealthCheckAddHealthy{FirstCheck: first}}})
}

func (l *eventLog) successful(addr string) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_SuccessfulHealthCheckEvent{
		SuccessfulHealthCheckEvent: &datacorev3.HealthCheckSuccessful{}}})
}

func (l *eventLog) degraded(addr string) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_DegradedHealthyHost{
		DegradedHealthyHost: &datacorev3.DegradedHealthyHost{}}})
}

func (l *eventLog) noLongerDegraded(addr string) {
	l.write(addr, &datacorev3.HealthCheckEvent{Event: &datacorev3.HealthCheckEvent_NoLongerDegradedHost{
		NoLongerDegradedHost: &datacorev3.NoLongerDegradedHost{}}})
}

// write completes ev with what every event carries and appends it.
func (l *eventLog) write(addr string, ev *datacorev3.HealthCheckEvent) {
	if l == nil {
		return
	}
	ev.HealthCheckerType = l.kind
	ev.ClusterName = l.cluster
	ev.Host = hostAddress(addr)
	ev.Timestamp = timestamppb.New(l.now())
	raw, err := protojson.MarshalOptions{EmitDefaultValues: true, UseProtoNames: true}.Marshal(ev)
	if err != nil {
		return
	}
	// protojson's spacing varies on purpose; Envoy's lines are compact.
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return
	}
	buf.WriteByte('\n')
	b := buf.Bytes()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		_, _ = f.Write(b)
	}
}

// close closes the files; later events are dropped.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		_ = f.Close()
	}
	l.files = nil
}

// hostAddress is the event's host: the socket address of "ip:port".
func hostAddress(addr string) *corev3.Address {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	p, _ := strconv.ParseUint(port, 10, 32)
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
	}}}
}
