package extproc

import (
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestSendBodyEarlyCompile checks that send_body_without_waiting_for_header_response
// is taken by a downstream filter and refused with its path upstream.
func TestSendBodyEarlyCompile(t *testing.T) {
	p := &extprocv3.ExternalProcessor{
		GrpcService:                             processorAt("127.0.0.1:1"),
		ProcessingMode:                          &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_STREAMED},
		SendBodyWithoutWaitingForHeaderResponse: true,
	}
	c, err := Factory{}.Compile(p, testContext())
	if err != nil {
		t.Fatal(err)
	}
	if !c.(*config).sendBodyEarly {
		t.Error("the field was not kept")
	}
	_ = c.(*config).Close()

	ctx := testContext()
	ctx.Upstream = true
	_, err = Factory{}.Compile(p, ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "send_body_without_waiting_for_header_response: ") {
		t.Fatalf("upstream: error %v, want one naming the field", err)
	}
}

// TestProtocolConfigOnce checks that the protocol_config goes with the
// first message only, with the body modes in effect.
func TestProtocolConfigOnce(t *testing.T) {
	f := &filter{c: &config{sendBodyEarly: true}, mode: mode{requestBody: extprocv3.ProcessingMode_STREAMED, responseBody: extprocv3.ProcessingMode_BUFFERED}}
	first, second := &extprocsvc.ProcessingRequest{}, &extprocsvc.ProcessingRequest{}
	f.encodeProtocolConfig(first)
	f.encodeProtocolConfig(second)
	pc := first.GetProtocolConfig()
	if pc.GetRequestBodyMode() != extprocv3.ProcessingMode_STREAMED || pc.GetResponseBodyMode() != extprocv3.ProcessingMode_BUFFERED ||
		!pc.GetSendBodyWithoutWaitingForHeaderResponse() {
		t.Errorf("first message's protocol_config %v", pc)
	}
	if second.GetProtocolConfig() != nil {
		t.Errorf("second message has a protocol_config %v", second.GetProtocolConfig())
	}
	obs := &filter{c: &config{observability: true}}
	m := &extprocsvc.ProcessingRequest{}
	obs.encodeProtocolConfig(m)
	if m.GetProtocolConfig() != nil {
		t.Error("observability_mode sends a protocol_config")
	}
}
