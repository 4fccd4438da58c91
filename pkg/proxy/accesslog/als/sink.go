package als

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	alsv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closeGrace bounds the last delivery when a sink is closed.
const closeGrace = time.Second

// kind is which entries a sink sends.
type kind uint8

const (
	httpLogs kind = iota
	tcpLogs
)

// sink is one gRPC access logger.
type sink struct {
	kind       kind
	logName    string
	node       *corev3.Node
	ch         *grpcservice.Channel
	flushEvery time.Duration
	// maxBytes bounds the buffer (Envoy's approximate message size); 0
	// sends every entry at once and never drops.
	maxBytes int

	requestHeaders, responseHeaders, responseTrailers []string
	tags                                              []accesslog.CustomTag

	written, dropped *stats.Counter
	log              logr.Logger

	mu   sync.Mutex
	http []*datav3.HTTPAccessLogEntry
	tcp  []*datav3.TCPAccessLogEntry
	size int

	// sender sends the buffer; a full buffer wakes it.
	sender *accesslog.Sender

	// The sender's own: the open stream, and whether the service ended
	// it.
	stream     alsv3.AccessLogService_StreamAccessLogsClient
	streamEnd  context.CancelFunc
	streamGone *atomic.Bool
	// streamDone is closed when the service has ended the stream.
	streamDone  chan struct{}
	loggedError bool
	// ended counts the streams the service ended, for tests.
	ended atomic.Int64
	// streamRetries is grpc_stream_retry_policy's num_retries: how many
	// more times a stream that cannot be established is tried.
	streamRetries int
}

// start makes the sink's counters and starts its sender.
func (s *sink) start(ctx accesslog.SinkContext) (*sink, error) {
	st := ctx.Stats
	if st == nil {
		st = stats.NewStore()
	}
	sc := st.Scope(statPrefix)
	s.written, s.dropped = sc.Counter("logs_written"), sc.Counter("logs_dropped")
	s.log = ctx.Log
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	s.sender = accesslog.StartSender(s.flushEvery, s.flush, s.last)
	return s, nil
}

// Log implements accesslog.Sink: it adds e to the buffer, or drops it
// when the buffer is full.
func (s *sink) Log(buf []byte, e *accesslog.Entry) ([]byte, error) {
	var (
		h    *datav3.HTTPAccessLogEntry
		t    *datav3.TCPAccessLogEntry
		size int
	)
	if s.kind == httpLogs {
		h = s.httpEntry(e)
		size = proto.Size(h)
	} else {
		t = s.tcpEntry(e)
		size = proto.Size(t)
	}
	s.mu.Lock()
	if s.sender.Closed() || (s.maxBytes > 0 && s.size >= s.maxBytes) {
		s.mu.Unlock()
		s.dropped.Inc()
		s.sender.Wake()
		return buf, nil
	}
	if h != nil {
		s.http = append(s.http, h)
	} else {
		s.tcp = append(s.tcp, t)
	}
	s.size += size
	full := s.size >= s.maxBytes
	s.mu.Unlock()
	s.written.Inc()
	if full {
		s.sender.Wake()
	}
	return buf, nil
}

// last sends what is left when the sink closes, within closeGrace.
func (s *sink) last() {
	s.flush()
	if s.stream != nil {
		// Cancelling the stream at once could lose the last batch
		// still in flight: half-close it and wait for the service to
		// end it (Close cancels after closeGrace).
		_ = s.stream.CloseSend()
		<-s.streamDone
	}
	s.endStream()
}

// take empties the buffer into one message.
func (s *sink) take() *alsv3.StreamAccessLogsMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.http) == 0 && len(s.tcp) == 0 {
		return nil
	}
	msg := &alsv3.StreamAccessLogsMessage{}
	if s.kind == httpLogs {
		msg.LogEntries = &alsv3.StreamAccessLogsMessage_HttpLogs{HttpLogs: &alsv3.StreamAccessLogsMessage_HTTPAccessLogEntries{LogEntry: s.http}}
		s.http = nil
	} else {
		msg.LogEntries = &alsv3.StreamAccessLogsMessage_TcpLogs{TcpLogs: &alsv3.StreamAccessLogsMessage_TCPAccessLogEntries{LogEntry: s.tcp}}
		s.tcp = nil
	}
	s.size = 0
	return msg
}

// flush sends the buffer on the stream, opening one (with the
// identifier) when there is none or the service ended the last. A batch
// that cannot be sent is lost, as in Envoy; the first failure in a row is
// logged.
func (s *sink) flush() {
	msg := s.take()
	if msg == nil {
		return
	}
	if s.stream != nil && s.streamGone.Load() {
		s.endStream()
	}
	if s.stream == nil {
		st, cancel, err := s.openStream()
		if err != nil {
			s.failed("cannot open the access log stream", err)
			return
		}
		gone, done := &atomic.Bool{}, make(chan struct{})
		// The service may end the stream at any time; watching for it
		// lets the next batch go on a new stream rather than be lost.
		go func() {
			defer close(done)
			var resp alsv3.StreamAccessLogsResponse
			_ = st.RecvMsg(&resp)
			gone.Store(true)
			s.ended.Add(1)
		}()
		s.stream, s.streamEnd, s.streamGone, s.streamDone = st, cancel, gone, done
		msg.Identifier = &alsv3.StreamAccessLogsMessage_Identifier{Node: s.node, LogName: s.logName}
	}
	if err := s.stream.Send(msg); err != nil {
		s.endStream()
		s.failed("cannot send access logs", err)
		return
	}
	s.loggedError = false
}

// Envoy's router back-off of the stream retries, which
// grpc_stream_retry_policy does not set: 25 ms, up to ten times that.
const (
	streamRetryBase = 25 * time.Millisecond
	streamRetryMax  = 10 * streamRetryBase
)

// openStream opens a stream, tried again up to streamRetries times when
// it cannot be established (Envoy's retry_on connect-failure: gRPC fails
// the opening of a stream only when it cannot connect), each retry a new
// connection attempt after a jittered back-off.
func (s *sink) openStream() (alsv3.AccessLogService_StreamAccessLogsClient, context.CancelFunc, error) {
	var bo *dns.BackoffState
	for try := 0; ; try++ {
		ctx, cancel := s.ch.CallContext(s.sender.Context(), true)
		st, err := alsv3.NewAccessLogServiceClient(s.ch.Conn()).StreamAccessLogs(ctx)
		if err == nil {
			return st, cancel, nil
		}
		cancel()
		if try >= s.streamRetries || s.sender.Context().Err() != nil {
			return nil, nil, err
		}
		if bo == nil {
			bo = dns.NewBackoffState(&dns.Backoff{Base: streamRetryBase, Max: streamRetryMax}, 0, rand.Uint64)
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-t.C:
		case <-s.sender.Context().Done():
			t.Stop()
			return nil, nil, err
		}
		// The channel waits its own back-off before connecting again:
		// the retry connects now.
		s.ch.Conn().ResetConnectBackoff()
	}
}

// endStream forgets the stream, cancelling it.
func (s *sink) endStream() {
	if s.streamEnd != nil {
		s.streamEnd()
	}
	s.stream, s.streamEnd = nil, nil
}

// failed logs a delivery failure once until a delivery succeeds.
func (s *sink) failed(msg string, err error) {
	if s.loggedError {
		return
	}
	s.loggedError = true
	s.log.Info(msg, "log_name", s.logName, "service", s.ch.Target, "error", err.Error())
}

// Close implements accesslog.Closer: later entries are dropped, the
// buffer is sent within closeGrace, and the channel is closed.
func (s *sink) Close() error {
	if !s.sender.Close(closeGrace) {
		return nil
	}
	return s.ch.Close()
}
