package extproc

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/metadata"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// service is a processor's channel and client.
type service struct {
	ch     *grpcservice.Channel
	client extprocsvc.ExternalProcessorClient
}

// newService returns the client of an open channel.
func newService(ch *grpcservice.Channel) *service {
	return &service{ch: ch, client: extprocsvc.NewExternalProcessorClient(ch.Conn())}
}

// close closes the channel.
func (s *service) close() error { return s.ch.Close() }

// sideStream is one request's Process stream: a goroutine receives the
// processor's messages into msgs, and its end into end.
type sideStream struct {
	cancel context.CancelFunc
	cl     extprocsvc.ExternalProcessor_ProcessClient
	msgs   chan *extprocsvc.ProcessingResponse
	// resp receives the answers of the response's phases (and the
	// immediate responses) once split is set: a FULL_DUPLEX_STREAMED
	// request body's answers go on arriving on msgs, read by another
	// goroutine, while the response's are read, as Envoy dispatches an
	// answer by its kind.
	resp  chan *extprocsvc.ProcessingResponse
	split atomic.Bool
	// sendMu serializes the sends: a FULL_DUPLEX_STREAMED body's pieces
	// leave from a goroutine of their own while the other direction's
	// messages go.
	sendMu sync.Mutex
	// end is closed when the stream ended, endErr saying how (io.EOF
	// when the processor closed it cleanly); every reader sees it.
	end    chan struct{}
	endErr error
	// span is the stream's span, nil for an untraced request.
	span *tracing.CallSpan
}

// openStream starts a Process stream under ctx, which cancel ends; the
// channel's initial metadata applies, each entry of extra (the route's
// grpc_initial_metadata) replacing the values of its key, then the trace
// context of sp, the stream's span (nil for an untraced request), which
// ends with the stream; no timeout (each message has its own). It blocks
// while the channel connects.
func (s *service) openStream(ctx context.Context, cancel context.CancelFunc, extra []*corev3.HeaderValue, sp *tracing.CallSpan) (*sideStream, error) {
	ctx, callCancel := s.ch.CallContext(ctx, true)
	if trace := sp.Metadata(); len(extra) > 0 || len(trace) > 0 {
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		for _, h := range extra {
			v := h.GetValue()
			if len(h.GetRawValue()) > 0 {
				v = string(h.GetRawValue())
			}
			md.Set(h.GetKey(), v)
		}
		// As Envoy's client, which injects the span's context once the
		// initial metadata is in the headers.
		for k, v := range trace {
			md[k] = v
		}
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	cl, err := s.client.Process(ctx)
	if err != nil {
		sp.Finish(err, time.Now())
		callCancel()
		cancel()
		return nil, err
	}
	st := &sideStream{
		cancel: func() { callCancel(); cancel() },
		cl:     cl,
		msgs:   make(chan *extprocsvc.ProcessingResponse),
		resp:   make(chan *extprocsvc.ProcessingResponse),
		end:    make(chan struct{}),
		span:   sp,
	}
	go st.receive(ctx)
	return st, nil
}

// receive hands the processor's messages over until the stream ends.
func (st *sideStream) receive(ctx context.Context) {
	for {
		m, err := st.cl.Recv()
		if err != nil {
			st.endSpan(ctx, err)
			st.endErr = err
			close(st.end)
			return
		}
		ch := st.msgs
		if st.split.Load() && !requestKind(m) {
			ch = st.resp
		}
		select {
		case ch <- m:
		case <-ctx.Done():
			st.span.Cancel(time.Now())
			st.endErr = ctx.Err()
			close(st.end)
			return
		}
	}
}

// requestKind reports whether m answers one of the request's phases.
func requestKind(m *extprocsvc.ProcessingResponse) bool {
	switch m.GetResponse().(type) {
	case *extprocsvc.ProcessingResponse_RequestHeaders, *extprocsvc.ProcessingResponse_RequestBody, *extprocsvc.ProcessingResponse_RequestTrailers:
		return true
	}
	return false
}

// answers is the channel the answers of a direction arrive on: the
// response's own once the stream is split.
func (st *sideStream) answers(response bool) <-chan *extprocsvc.ProcessingResponse {
	if response && st.split.Load() {
		return st.resp
	}
	return st.msgs
}

// splitResponses sends the response's answers to their own channel from
// now on; set before the response's first message goes.
func (st *sideStream) splitResponses() { st.split.Store(true) }

// send sends a message. A failed send is not an error of its own: the
// receiver reports the stream's end, with its status.
func (st *sideStream) send(m *extprocsvc.ProcessingRequest) {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	_ = st.cl.Send(m)
}

// close ends the stream: half-close, then cancel, which ends the
// receiver; the stream's span, unless the processor ended the stream
// first, ends cancelled, as Envoy's client resets a stream its filter
// is done with.
func (st *sideStream) close() {
	// CloseSend may not run with a send; a send that waits for the
	// processor's flow control ends with the cancellation instead.
	if st.sendMu.TryLock() {
		_ = st.cl.CloseSend()
		st.sendMu.Unlock()
	}
	st.cancel()
	st.span.Cancel(time.Now())
}

// endSpan ends the stream's span as the stream ended, with err from the
// receiver: the processor's status (io.EOF an OK one), or a cancellation
// when the filter ended the stream (ctx's end).
func (st *sideStream) endSpan(ctx context.Context, err error) {
	now := time.Now()
	switch {
	case errors.Is(err, io.EOF):
		st.span.Finish(nil, now)
	case ctx.Err() != nil:
		st.span.Cancel(now)
	default:
		st.span.Finish(err, now)
	}
}
