package extproc

import (
	"context"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/metadata"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
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
	// end receives the error that ended the stream (io.EOF when the
	// processor closed it cleanly), once.
	end chan error
}

// openStream starts a Process stream under ctx, which cancel ends; the
// channel's initial metadata applies, each entry of extra (the route's
// grpc_initial_metadata) replacing the values of its key; no timeout
// (each message has its own). It blocks while the channel connects.
func (s *service) openStream(ctx context.Context, cancel context.CancelFunc, extra []*corev3.HeaderValue) (*sideStream, error) {
	ctx, callCancel := s.ch.CallContext(ctx, true)
	if len(extra) > 0 {
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		for _, h := range extra {
			v := h.GetValue()
			if len(h.GetRawValue()) > 0 {
				v = string(h.GetRawValue())
			}
			md.Set(h.GetKey(), v)
		}
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	cl, err := s.client.Process(ctx)
	if err != nil {
		callCancel()
		cancel()
		return nil, err
	}
	st := &sideStream{
		cancel: func() { callCancel(); cancel() },
		cl:     cl,
		msgs:   make(chan *extprocsvc.ProcessingResponse),
		end:    make(chan error, 1),
	}
	go st.receive(ctx)
	return st, nil
}

// receive hands the processor's messages over until the stream ends.
func (st *sideStream) receive(ctx context.Context) {
	for {
		m, err := st.cl.Recv()
		if err != nil {
			st.end <- err
			return
		}
		select {
		case st.msgs <- m:
		case <-ctx.Done():
			st.end <- ctx.Err()
			return
		}
	}
}

// send sends a message. A failed send is not an error of its own: the
// receiver reports the stream's end, with its status.
func (st *sideStream) send(m *extprocsvc.ProcessingRequest) {
	_ = st.cl.Send(m)
}

// close ends the stream: half-close, then cancel, which ends the
// receiver.
func (st *sideStream) close() {
	_ = st.cl.CloseSend()
	st.cancel()
}
