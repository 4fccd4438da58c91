package outlier

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// EventLog writes ejections and un-ejections as JSON lines, one
// OutlierDetectionEvent each, as Envoy's cluster_manager.outlier_detection
// event_log_path does. One log serves every cluster.
type EventLog struct {
	mu  sync.Mutex
	f   *os.File
	now func() time.Time
}

// OpenEventLog opens (creating, appending) the file at path. now is the
// wall clock of the events' timestamps; nil means time.Now.
func OpenEventLog(path string, now func() time.Time) (*EventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &EventLog{f: f, now: now}, nil
}

// Reopen closes and reopens the file (log rotation: /reopen_logs,
// SIGUSR1), as Envoy reopens its access logs. A nil log does nothing.
func (l *EventLog) Reopen() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.f.Name(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_ = l.f.Close()
	l.f = f
	return nil
}

// Close closes the file. A nil log has nothing to close.
func (l *EventLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// eventJSON prints as Envoy does: proto field names, zero values
// included, one line.
var eventJSON = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

// eject logs an ejection (enforced or only detected); called with d.mu
// held, after the monitor's state changed.
func (l *EventLog) eject(d *Detector, m *Monitor, t datav3.OutlierEjectionType, enforced bool, now time.Time) {
	if l == nil {
		return
	}
	ev := l.common(d, m, m.lastUnejection, now)
	ev.Type = t
	ev.Action = datav3.Action_EJECT
	ev.Enforced = enforced
	switch t {
	case datav3.OutlierEjectionType_SUCCESS_RATE, datav3.OutlierEjectionType_SUCCESS_RATE_LOCAL_ORIGIN:
		o := external
		if t == datav3.OutlierEjectionType_SUCCESS_RATE_LOCAL_ORIGIN {
			o = local
		}
		ev.Event = &datav3.OutlierDetectionEvent_EjectSuccessRateEvent{EjectSuccessRateEvent: &datav3.OutlierEjectSuccessRate{
			HostSuccessRate:                     uint32(max(m.sr[o].Rate(), 0)),
			ClusterAverageSuccessRate:           uint32(max(d.sr[o].average, 0)),
			ClusterSuccessRateEjectionThreshold: uint32(max(d.sr[o].threshold, 0)),
		}}
	case datav3.OutlierEjectionType_FAILURE_PERCENTAGE, datav3.OutlierEjectionType_FAILURE_PERCENTAGE_LOCAL_ORIGIN:
		o := external
		if t == datav3.OutlierEjectionType_FAILURE_PERCENTAGE_LOCAL_ORIGIN {
			o = local
		}
		ev.Event = &datav3.OutlierDetectionEvent_EjectFailurePercentageEvent{EjectFailurePercentageEvent: &datav3.OutlierEjectFailurePercentage{
			HostSuccessRate: uint32(max(m.sr[o].Rate(), 0)),
		}}
	default:
		ev.Event = &datav3.OutlierDetectionEvent_EjectConsecutiveEvent{EjectConsecutiveEvent: &datav3.OutlierEjectConsecutive{}}
	}
	l.write(ev)
}

// uneject logs a host's return to service.
func (l *EventLog) uneject(d *Detector, m *Monitor, now time.Time) {
	if l == nil {
		return
	}
	ev := l.common(d, m, m.lastEjection, now)
	ev.Action = datav3.Action_UNEJECT
	l.write(ev)
}

// common fills the fields every event has; last is the time of the
// previous action (zero for none).
func (l *EventLog) common(d *Detector, m *Monitor, last, now time.Time) *datav3.OutlierDetectionEvent {
	ev := &datav3.OutlierDetectionEvent{
		Timestamp:    timestamppb.New(l.now()),
		ClusterName:  d.deps.Cluster,
		UpstreamUrl:  m.host.Address,
		NumEjections: m.numEjections,
	}
	if !last.IsZero() {
		ev.SecsSinceLastAction = wrapperspb.UInt64(uint64(now.Sub(last) / time.Second))
	}
	return ev
}

func (l *EventLog) write(ev *datav3.OutlierDetectionEvent) {
	b, err := eventJSON.Marshal(ev)
	if err != nil {
		return
	}
	// protojson may space its output; Envoy's lines have no spaces.
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return
	}
	line.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(line.Bytes())
}
