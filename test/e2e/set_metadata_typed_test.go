package e2e

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// typedMetadataProcessor is an ext_proc server that records the typed
// metadata namespaces each stream's request headers arrive with, and
// lets the request go on.
type typedMetadataProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	mu   sync.Mutex
	seen []map[string]string
}

func (p *typedMetadataProcessor) Process(stream extprocsvc.ExternalProcessor_ProcessServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if req.GetRequestHeaders() == nil {
			continue
		}
		got := map[string]string{}
		for ns, a := range req.GetMetadataContext().GetTypedFilterMetadata() {
			var sv wrapperspb.StringValue
			if err := a.UnmarshalTo(&sv); err != nil {
				got[ns] = a.GetTypeUrl()
				continue
			}
			got[ns] = sv.GetValue()
		}
		p.mu.Lock()
		p.seen = append(p.seen, got)
		p.mu.Unlock()
		if err := stream.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{
			RequestHeaders: &extprocsvc.HeadersResponse{}}}); err != nil {
			return err
		}
	}
}

func (p *typedMetadataProcessor) last() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return nil
	}
	return p.seen[len(p.seen)-1]
}

var _ = Describe("The set metadata filter's typed values", func() {
	It("are written into the request's typed metadata, where ext_proc's typed forwarding namespaces read them; allow_overwrite decides", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		proc := &typedMetadataProcessor{}
		srv := grpc.NewServer()
		extprocsvc.RegisterExternalProcessorServer(srv, proc)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)

		stringValue := func(v string) string {
			return `{"@type": type.googleapis.com/google.protobuf.StringValue, value: ` + v + `}`
		}
		port := freePort()
		spec := proxySpec{
			Port: port,
			HCM:  "{stat_prefix: tm}",
			Filters: "[" + httpFilter("first", setMetadataType,
				`{metadata: [{metadata_namespace: team.kept, typed_value: `+stringValue("first")+`},
					{metadata_namespace: team.replaced, typed_value: `+stringValue("first")+`}]}`) + ", " +
				httpFilter("second", setMetadataType,
					`{metadata: [{metadata_namespace: team.kept, typed_value: `+stringValue("second")+`},
					{metadata_namespace: team.replaced, allow_overwrite: true, typed_value: `+stringValue("second")+`},
					{metadata_namespace: team.unlisted, typed_value: `+stringValue("x")+`}]}`) + ", " +
				httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
					`{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 5s,
					processing_mode: {response_header_mode: SKIP},
					metadata_options: {forwarding_namespaces: {typed: [team.kept, team.replaced]}}}`) + "]",
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(extProcUpstream())},
				{Name: "proc", Port: ln.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()},
			},
		}
		sc := Start(newDir(), spec.YAML())
		r := httpDo(&http.Client{Timeout: 5 * time.Second}, "GET", listenerURL(port, "/typed"), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(proc.last()).To(Equal(map[string]string{"team.kept": "first", "team.replaced": "second"}))
		Expect(statValue(sc, "http.tm.set_metadata.overwrite_denied")).To(Equal("1"))
	})
})
