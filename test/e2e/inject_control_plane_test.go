package e2e

import (
	"context"
	"crypto/tls"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// injectedNodeID is the node id of an injected proxy of pod app-1 in
// namespace shop (--service-node $(POD_NAME).$(POD_NAMESPACE)): what a
// control plane keys its configuration by.
const injectedNodeID = "app-1.shop"

// injectPod injects pod app-1 of namespace shop, with annotations, under
// cfg, and returns it.
func injectPod(cfg inject.Config, annotations map[string]string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app-1", Namespace: "shop", Annotations: annotations,
			Labels: map[string]string{inject.InjectLabel: inject.InjectLabelValue},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	changed, err := inject.Inject(pod, cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(changed).To(BeTrue())
	return pod
}

// kubeletArgs returns an init container's arguments as the kubelet passes
// them: $(VAR) expanded from the pod's fields.
func kubeletArgs(pod *corev1.Pod, name string) []string {
	GinkgoHelper()
	for _, c := range pod.Spec.InitContainers {
		if c.Name != name {
			continue
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = strings.NewReplacer("$(POD_NAME)", pod.Name, "$(POD_NAMESPACE)", pod.Namespace).Replace(a)
		}
		return args
	}
	Fail("no container " + name)
	return nil
}

// startADSServer serves go-control-plane's ADS on a loopback port, over
// TLS when creds are given, until the spec ends, and returns its port.
func startADSServer(cache cachev3.SnapshotCache, creds credentials.TransportCredentials) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(context.Background(), cache, nil))
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return ln.Addr().(*net.TCPAddr).Port
}

// An injected proxy pointed at a control plane (the controller's
// --sidecar-control-plane flags, the chart's sidecar.controlPlane) runs
// the injected command line, built-in bootstrap and all, and takes its
// clusters and listeners from a real go-control-plane server.
var _ = Describe("Injected proxies joining a control plane", func() {
	// injectedArgs injects pod app-1 in shop under cfg, with its admin on
	// adminPort, and returns the proxy's arguments as the kubelet passes
	// them.
	injectedArgs := func(cfg inject.Config, adminPort int, annotations map[string]string) []string {
		GinkgoHelper()
		ann := map[string]string{v1alpha1.AdminPortAnnotation: strconv.Itoa(adminPort)}
		maps.Copy(ann, annotations)
		return kubeletArgs(injectPod(cfg, ann), inject.ContainerName)
	}

	DescribeTable("takes its clusters and listeners over ADS, and serves traffic through them",
		func(tlsServer, delta bool, annotations map[string]string) {
			upstream := startNamed("A")
			cache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
			snap := xdsSnapshot("v1",
				[]*listenerv3.Listener{listenerProto(listenerDef{Name: "web", Chains: []string{routeToCluster("web", "svc")}})},
				[]*clusterv3.Cluster{clusterProto("svc", upstream, "")})
			Expect(cache.SetSnapshot(context.Background(), injectedNodeID, snap)).To(Succeed())

			cp := &inject.ControlPlane{Address: "127.0.0.1", Delta: delta}
			var creds credentials.TransportCredentials
			if tlsServer {
				ca, err := tlstest.NewCA("control plane CA")
				Expect(err).NotTo(HaveOccurred())
				leaf, err := ca.Issue(tlstest.Options{CommonName: "xds.mesh.svc", DNS: []string{"xds.mesh.svc"}})
				Expect(err).NotTo(HaveOccurred())
				cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
				Expect(err).NotTo(HaveOccurred())
				creds = credentials.NewServerTLSFromCert(&cert)
				cp.CABundle, cp.SNI = string(ca.PEM), "xds.mesh.svc"
			}
			cp.Port = int32(startADSServer(cache, creds))
			Expect(cp.Validate()).To(Succeed())

			cfg := inject.DefaultConfig()
			cfg.ProbePort = int32(freePort())
			cfg.ControlPlane = cp
			args := injectedArgs(cfg, freePort(), annotations)
			s := Launch(newDir(), "", "", args...)
			s.WaitForAdmin()
			waitLive(s)

			Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))
			Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
			Expect(statValue(s, "control_plane.connected_state")).To(Equal("1"))
			Expect(s.ServerInfo().GetNode().GetId()).To(Equal(injectedNodeID))
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			r := httpDo(client, http.MethodGet, "http://"+listenerAddr(s, "web")+"/", nil, nil)
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(r.Body).To(Equal("A"))
		},
		Entry("state of the world, in clear text", false, false, nil),
		Entry("delta over TLS", true, true, nil),
	)

	// The capture bootstrap binds fixed ports (15001, 15006): its
	// control-plane variant is checked in --mode validate only.
	It("passes --mode validate with the capture bootstrap and a control plane by DNS name over TLS", func() {
		ca, err := tlstest.NewCA("control plane CA")
		Expect(err).NotTo(HaveOccurred())
		cfg := inject.DefaultConfig()
		cfg.ControlPlane = &inject.ControlPlane{Address: "xds.mesh.svc.cluster.local", Port: 15012, Delta: true, CABundle: string(ca.PEM)}
		args := injectedArgs(cfg, 9901, map[string]string{inject.AnnotationCapture: "true"})
		Expect(strings.Join(args, " ")).To(ContainSubstring("DELTA_GRPC"))
		r := Run(append(args, "--mode", "validate")...)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
