package extproc

import (
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// scriptedProcessor runs script on every Process stream.
type scriptedProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	script func(srv extprocsvc.ExternalProcessor_ProcessServer) error
}

func (p *scriptedProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	return p.script(srv)
}

// startScripted serves a scripted processor on loopback and compiles a
// filter configuration reaching it, edited by edit.
func startScripted(t *testing.T, script func(extprocsvc.ExternalProcessor_ProcessServer) error, edit func(*extprocv3.ExternalProcessor)) (*config, *stats.Store) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	extprocsvc.RegisterExternalProcessorServer(srv, &scriptedProcessor{script: script})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	p := &extprocv3.ExternalProcessor{GrpcService: processorAt(ln.Addr().String()), MessageTimeout: durationpb.New(5 * time.Second)}
	if edit != nil {
		edit(p)
	}
	ctx := testContext()
	c, err := compile(p, ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, ctx.Stats
}

// headersAnswer answers request headers with cr.
func headersAnswer(cr *extprocsvc.CommonResponse) *extprocsvc.ProcessingResponse {
	return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{Response: cr}}}
}

// decodeStream is a GET without a body.
func decodeStream() *httpfiltertest.Stream {
	return &httpfiltertest.Stream{
		Req:        router.Request{Host: "h", Path: "/p", Method: "GET", Scheme: "http"},
		ReqHeaders: httpfiltertest.NewHeaders("x-a", "1"),
		StreamInfo: httpfilter.StreamInfo{ContentLength: -1},
	}
}

// decode runs a GET through the filter's request side.
func decode(c *config) (*httpfiltertest.Stream, httpfilter.Status) {
	s := decodeStream()
	f := c.NewFilter().(*filter)
	st := f.DecodeHeaders(s)
	f.OnDestroy()
	return s, st
}

func TestExchangeOutcomes(t *testing.T) {
	recvThen := func(then func(srv extprocsvc.ExternalProcessor_ProcessServer) error) func(extprocsvc.ExternalProcessor_ProcessServer) error {
		return func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
			if _, err := srv.Recv(); err != nil {
				return err
			}
			return then(srv)
		}
	}
	cases := []struct {
		name    string
		script  func(extprocsvc.ExternalProcessor_ProcessServer) error
		edit    func(*extprocv3.ExternalProcessor)
		status  httpfilter.Status
		reply   int
		details string
		counts  map[string]uint64
	}{
		{
			name: "the processor asks for more time, once, within max_message_timeout",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				more := func(d time.Duration) error {
					return srv.Send(&extprocsvc.ProcessingResponse{OverrideMessageTimeout: durationpb.New(d)})
				}
				if err := more(time.Minute); err != nil { // over the maximum: ignored
					return err
				}
				if err := more(5 * time.Second); err != nil {
					return err
				}
				if err := more(5 * time.Second); err != nil { // a second one: ignored
					return err
				}
				time.Sleep(time.Second)
				return srv.Send(headersAnswer(&extprocsvc.CommonResponse{}))
			}),
			edit: func(p *extprocv3.ExternalProcessor) {
				p.MessageTimeout = durationpb.New(500 * time.Millisecond)
				p.MaxMessageTimeout = durationpb.New(10 * time.Second)
			},
			status: httpfilter.Continue,
			counts: map[string]uint64{"override_message_timeout_received": 1, "override_message_timeout_ignored": 2, "stream_msgs_received": 1, "message_timeouts": 0},
		},
		{
			name: "an answer of the wrong kind is spurious: the request goes on unprocessed",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				return srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvc.HeadersResponse{}}})
			}),
			status: httpfilter.Continue,
			counts: map[string]uint64{"spurious_msgs_received": 1, "stream_msgs_received": 0},
		},
		{
			name:   "a processor that closes the stream lets the request go on",
			script: recvThen(func(extprocsvc.ExternalProcessor_ProcessServer) error { return nil }),
			status: httpfilter.Continue,
			counts: map[string]uint64{"streams_started": 1, "streams_closed": 1, "streams_failed": 0},
		},
		{
			name: "a stream that fails answers 500",
			script: recvThen(func(extprocsvc.ExternalProcessor_ProcessServer) error {
				return status.Error(codes.Internal, "broken")
			}),
			status: httpfilter.Stop, reply: 500, details: "ext_proc_error_gRPC_error_13",
			counts: map[string]uint64{"streams_failed": 1, "failure_mode_allowed": 0},
		},
		{
			name: "disable_immediate_response makes an immediate response spurious",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				return srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{}}})
			}),
			edit:   func(p *extprocv3.ExternalProcessor) { p.DisableImmediateResponse = true },
			status: httpfilter.Continue,
			counts: map[string]uint64{"spurious_msgs_received": 1},
		},
		{
			name: "an immediate response without a status answers 200 with its details",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				return srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
					Body: []byte("hi"), Details: "said\thi there",
				}}})
			}),
			status: httpfilter.Stop, reply: 200, details: "said_hi_there",
			counts: map[string]uint64{"stream_msgs_received": 1},
		},
		{
			name: "a malformed mutation answers 500 with Envoy's words",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				return srv.Send(headersAnswer(&extprocsvc.CommonResponse{HeaderMutation: &extprocsvc.HeaderMutation{
					SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-b", Value: "v", RawValue: []byte("w")}}},
				}}))
			}),
			status: httpfilter.Stop, reply: 500, details: "Only_one_of_value_or_raw_value_in_the_HeaderValue_message_should_be_set.",
			counts: map[string]uint64{"rejected_header_mutations": 1},
		},
		{
			name: "clear_route_cache without a header mutation is ignored",
			script: recvThen(func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				return srv.Send(headersAnswer(&extprocsvc.CommonResponse{ClearRouteCache: true}))
			}),
			status: httpfilter.Continue,
			counts: map[string]uint64{"clear_route_cache_ignored": 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, store := startScripted(t, tc.script, tc.edit)
			s, st := decode(c)
			if st != tc.status {
				t.Fatalf("status %v, want %v (reply %+v)", st, tc.status, s.Reply)
			}
			if tc.reply != 0 {
				if s.Reply == nil || s.Reply.Status != tc.reply || s.Reply.Details != tc.details {
					t.Fatalf("reply %+v, want %d %q", s.Reply, tc.reply, tc.details)
				}
			} else if s.Reply != nil {
				t.Fatalf("unexpected reply %+v", s.Reply)
			}
			for name, want := range tc.counts {
				if got := store.Counter("http.in.ext_proc." + name).Value(); got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestUpstreamClearRouteCacheIgnored checks that an upstream instance
// clears no route (its request was routed already), and counts the
// answers that asked, as Envoy's clear_route_cache_upstream_ignored.
func TestUpstreamClearRouteCacheIgnored(t *testing.T) {
	c, store := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		if _, err := srv.Recv(); err != nil {
			return err
		}
		return srv.Send(headersAnswer(&extprocsvc.CommonResponse{ClearRouteCache: true, HeaderMutation: &extprocsvc.HeaderMutation{
			SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-b", RawValue: []byte("w")}}},
		}}))
	}, nil)
	c.upstream = true
	s, st := decode(c)
	if st != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("status %v reply %+v, want Continue", st, s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("x-b"); v != "w" {
		t.Errorf("x-b %q, want the processor's mutation applied", v)
	}
	if s.RouteCleared != 0 {
		t.Errorf("the route was cleared %d times, want none upstream", s.RouteCleared)
	}
	for name, want := range map[string]uint64{"clear_route_cache_upstream_ignored": 1, "clear_route_cache_ignored": 0} {
		if got := store.Counter("http.in.ext_proc." + name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
