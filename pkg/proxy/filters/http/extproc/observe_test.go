package extproc

import (
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func TestObservabilityModeSendsAndGoes(t *testing.T) {
	got := make(chan *extprocsvc.ProcessingRequest, 4)
	ended := make(chan struct{})
	c, store := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		defer close(ended)
		for {
			m, err := srv.Recv()
			if err != nil {
				return nil
			}
			got <- m
			// An answer is ignored: no immediate response in
			// observability mode.
			if err := srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
			}}}); err != nil {
				return nil
			}
		}
	}, func(p *extprocv3.ExternalProcessor) {
		p.ObservabilityMode = true
		p.DeferredCloseTimeout = durationpb.New(100 * time.Millisecond)
		p.ProcessingMode = &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_BUFFERED}
	})
	s, _ := decode(c)
	if s.Reply != nil {
		t.Fatalf("the request was answered %+v: observability mode never waits nor replies", s.Reply)
	}
	m := <-got
	if !m.GetObservabilityMode() || m.GetRequestHeaders() == nil {
		t.Fatalf("first message %v, want the request headers in observability mode", m)
	}
	// The filter is destroyed: the stream closes after the deferred
	// close timeout, as the processor never ends it.
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not closed after deferred_close_timeout")
	}
	for name, want := range map[string]uint64{"streams_started": 1, "stream_msgs_sent": 1, "stream_msgs_received": 0} {
		if v := store.Counter("http.in.ext_proc." + name).Value(); v != want {
			t.Errorf("%s = %d, want %d", name, v, want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for store.Counter("http.in.ext_proc.streams_closed").Value() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if v := store.Counter("http.in.ext_proc.streams_closed").Value(); v != 1 {
		t.Errorf("streams_closed = %d, want 1", v)
	}
}

func TestObservabilityModeBodies(t *testing.T) {
	c, _ := startScripted(t, failing, func(p *extprocv3.ExternalProcessor) {
		p.ObservabilityMode = true
		p.ProcessingMode = &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_BUFFERED, ResponseBodyMode: extprocv3.ProcessingMode_STREAMED}
	})
	f := c.NewFilter().(*filter)
	defer f.OnDestroy()
	set, err := f.routeSettings(decodeStream())
	if err != nil {
		t.Fatal(err)
	}
	if set.mode.requestBody != extprocv3.ProcessingMode_NONE || set.mode.responseBody != extprocv3.ProcessingMode_STREAMED {
		t.Errorf("mode %+v: only STREAMED bodies are sent in observability mode", set.mode)
	}
	// A failing processor does not fail the request.
	s, st := decode(c)
	if st != httpfilter.Continue || s.Reply != nil {
		t.Errorf("%v reply %+v", st, s.Reply)
	}
}
