package tap

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/admin"
)

// sessionBuffer bounds the traces waiting for the /tap client: beyond
// it, traces are dropped rather than holding requests or memory.
const sessionBuffer = 64

// errAttached is Envoy's answer to a second /tap.
const errAttached = message("An attached /tap admin stream already exists. Detach it.")

// message is an error whose text is Envoy's answer, capitals and full
// stop included.
type message string

func (m message) Error() string { return string(m) }

// Extension is the kind of extension that registers a config id: what a
// /tap session for the id may configure depends on it.
type Extension uint8

const (
	// HTTPFilter is the tap HTTP filter (envoy.filters.http.tap).
	HTTPFilter Extension = iota
	// TransportSocket is the tap transport socket
	// (envoy.transport_sockets.tap).
	TransportSocket
)

// Registry holds the config ids of the extensions configured with
// admin_config and the one attached /tap session. It implements
// admin.TapSource. The zero value is ready.
type Registry struct {
	mu sync.Mutex
	// ids counts the extensions of each config id, filters the HTTP
	// filters among them.
	ids, filters map[string]int
	session      atomic.Pointer[Session]
}

var _ admin.TapSource = (*Registry)(nil)

// Register records the config id of an extension of kind ext. An
// attached session for id applies to it at once, as Envoy hands the
// attached configuration to an extension registering its id.
func (r *Registry) Register(id string, ext Extension) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids, r.filters = make(map[string]int), make(map[string]int)
	}
	r.ids[id]++
	if ext == HTTPFilter {
		r.filters[id]++
	}
}

// Unregister forgets the config id of one extension of kind ext (its
// filter chain, listener or cluster is gone). When it was the last
// extension of all, /tap is gone, as Envoy's handler goes with its last
// extension: the attached session then ends, its response completing.
// While other extensions remain, the session stays attached (to a
// listener or cluster added back with its id, too), as in Envoy.
func (r *Registry) Unregister(id string, ext Extension) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids[id]--; r.ids[id] <= 0 {
		delete(r.ids, id)
	}
	if ext == HTTPFilter {
		if r.filters[id]--; r.filters[id] <= 0 {
			delete(r.filters, id)
		}
	}
	if len(r.ids) == 0 {
		if s := r.session.Swap(nil); s != nil {
			s.end()
		}
	}
}

// HasFilters reports whether any filter registered: /tap exists only then.
func (r *Registry) HasFilters() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids) > 0
}

// Active is the attached session for config id, or nil: one atomic load,
// so requests pay nothing while no tap is attached.
func (r *Registry) Active(id string) *Session {
	s := r.session.Load()
	if s == nil || s.id != id {
		return nil
	}
	return s
}

// AttachTap implements admin.TapSource.
func (r *Registry) AttachTap(body []byte) (admin.TapSession, error) {
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, message(fmt.Sprintf("Unable to parse tap request: %v", err))
	}
	var req adminv3.TapRequest
	if err := protojson.Unmarshal(js, &req); err != nil {
		return nil, message(fmt.Sprintf("Unable to parse tap request: %v", err))
	}
	if req.GetConfigId() == "" {
		return nil, errors.New("config_id: required")
	}
	cfg, _, err := compileConfig(req.GetTapConfig(), "tap_config", sinkAdmin)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.session.Load() != nil {
		return nil, errAttached
	}
	if r.ids[req.GetConfigId()] == 0 {
		return nil, message(fmt.Sprintf("Unknown config id '%s'. No extension has registered with this id.", req.GetConfigId()))
	}
	if req.GetTapConfig().GetOutputConfig().GetMinStreamedSentBytes() != nil && r.filters[req.GetConfigId()] > 0 {
		return nil, fmt.Errorf("tap_config.output_config.min_streamed_sent_bytes: not supported by the tap HTTP filter, which config id '%s' has (only the tap transport socket uses it)", req.GetConfigId())
	}
	s := &Session{reg: r, id: req.GetConfigId(), traces: make(chan []byte, sessionBuffer), done: make(chan struct{})}
	cfg.Sink = s
	s.Config = cfg
	r.session.Store(s)
	return s, nil
}

// Session is the attached /tap session: its configuration and the
// channel its traces reach the admin response through.
type Session struct {
	*Config
	reg    *Registry
	id     string
	traces chan []byte
	// done is closed when the last extension is gone (ending).
	done   chan struct{}
	ending sync.Once
}

// Traces implements admin.TapSession.
func (s *Session) Traces() <-chan []byte { return s.traces }

// Done implements admin.TapSession.
func (s *Session) Done() <-chan struct{} { return s.done }

// end closes done, once.
func (s *Session) end() { s.ending.Do(func() { close(s.done) }) }

// Detach implements admin.TapSession: filters stop tapping at once.
func (s *Session) Detach() {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	s.reg.session.CompareAndSwap(s, nil)
}

// Submit implements Sink: each trace or segment rendered as Envoy's
// pretty, always-print JSON, dropped when the client lags by more than
// sessionBuffer of them.
func (s *Session) Submit(w *datatapv3.TraceWrapper, _ uint64) {
	b, err := admin.MarshalProto(w, true)
	if err != nil {
		return
	}
	select {
	case s.traces <- b:
	default:
	}
}
