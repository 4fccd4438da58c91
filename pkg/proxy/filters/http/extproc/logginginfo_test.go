package extproc

import (
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestFilterMetadataInTheFilterState(t *testing.T) {
	md, _ := structpb.NewStruct(map[string]any{"team": "payments"})
	answer := func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		if _, err := srv.Recv(); err != nil {
			return nil
		}
		return srv.Send(headersAnswer(nil))
	}
	c, _ := startScripted(t, answer, func(p *extprocv3.ExternalProcessor) { p.FilterMetadata = md })
	s, _ := decode(c)
	v, ok := s.FilterStateValue("envoy.filters.http.ext_proc")
	if !ok {
		t.Fatal("no filter state under the filter's name")
	}
	li, ok := v.(*loggingInfo)
	if !ok || !proto.Equal(li.FilterMetadata, md) {
		t.Errorf("filter state %#v, want the filter_metadata", v)
	}
	if _, has := li.FilterStateString(); has || li.FilterStateProto() != nil {
		t.Error("the object has a PLAIN or TYPED form; Envoy's holds the call statistics only")
	}

	c2, _ := startScripted(t, answer, nil)
	s, _ = decode(c2)
	if _, ok := s.FilterStateValue("envoy.filters.http.ext_proc"); ok {
		t.Error("filter state without filter_metadata")
	}
}
