package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kubernetesExample reads examples/kubernetes: the ConfigMap's bootstrap,
// the Deployment and the Service.
func kubernetesExample() (string, *appsv1.Deployment, *corev1.Service, *corev1.ConfigMap) {
	GinkgoHelper()
	dir := filepath.Join(examplesDir, "kubernetes")
	var (
		cm  corev1.ConfigMap
		dep appsv1.Deployment
		svc corev1.Service
	)
	Expect(yaml.UnmarshalStrict([]byte(readFile(filepath.Join(dir, "bootstrap-configmap.yaml"))), &cm)).To(Succeed())
	Expect(yaml.UnmarshalStrict([]byte(readFile(filepath.Join(dir, "deployment.yaml"))), &dep)).To(Succeed())
	Expect(yaml.UnmarshalStrict([]byte(readFile(filepath.Join(dir, "service.yaml"))), &svc)).To(Succeed())
	bootstrap, ok := cm.Data["bootstrap.yaml"]
	Expect(ok).To(BeTrue(), "the ConfigMap has no bootstrap.yaml key")
	return bootstrap, &dep, &svc, &cm
}

// serveText answers every request on 127.0.0.1:port with body.
func serveText(port int, body string) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
}

var _ = Describe("The Kubernetes example (examples/kubernetes)", func() {
	It("ties the Deployment, the Service and the ConfigMap together, and its bootstrap validates", func() {
		bootstrap, dep, svc, cm := kubernetesExample()
		pod := dep.Spec.Template
		Expect(pod.Labels).To(HaveKeyWithValue("proxy.outrigger.dev/inject", "true"))
		Expect(pod.Annotations).To(HaveKeyWithValue("proxy.outrigger.dev/bootstrap-configmap", cm.Name))
		Expect(svc.Spec.Selector).To(Equal(dep.Spec.Selector.MatchLabels))
		// The Service targets the proxy's inbound listener, the app
		// listens on loopback only.
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(bootstrap).To(ContainSubstring(fmt.Sprintf("address: 0.0.0.0, port_value: %d }", svc.Spec.Ports[0].TargetPort.IntValue())))
		Expect(pod.Spec.Containers[0].Args).To(ContainElement("-listen=127.0.0.1:8081"))

		r := Run("--mode", "validate", "--config-yaml", bootstrap)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})

	It("serves the app through its inbound listener and the backend through its outbound one", func() {
		bootstrap, _, _, _ := kubernetesExample()
		// The fixed ports move to free loopback ones; each must appear as
		// often as the example uses it, so that none is left behind.
		ports := map[string]int{}
		for fixed, uses := range map[string]int{"9901": 2, "9902": 1, "8080": 1, "8081": 1, "9001": 1, "80": 1} {
			pattern := "port_value: " + fixed + " }"
			Expect(strings.Count(bootstrap, pattern)).To(Equal(uses), "port %s", fixed)
			ports[fixed] = freePort()
			bootstrap = strings.ReplaceAll(bootstrap, pattern, fmt.Sprintf("port_value: %d }", ports[fixed]))
		}
		bootstrap = strings.ReplaceAll(bootstrap, "address: 0.0.0.0,", "address: 127.0.0.1,")
		bootstrap = strings.ReplaceAll(bootstrap, "backend.default.svc.cluster.local", "127.0.0.1")
		serveText(ports["8081"], "hello from the app")
		serveText(ports["80"], "hello from the backend")

		s := Start(newDir(), bootstrap)
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		Expect(httpDo(client, http.MethodGet, listenerURL(ports["8080"], "/"), nil, nil).Body).To(Equal("hello from the app"))
		Expect(httpDo(client, http.MethodGet, listenerURL(ports["9001"], "/"), nil, nil).Body).To(Equal("hello from the backend"))
		Expect(httpDo(client, http.MethodGet, listenerURL(ports["9902"], "/ready"), nil, nil).Body).To(Equal("LIVE\n"))
		for _, name := range []string{"http.inbound_8080.downstream_rq_2xx", "cluster.local_app.upstream_rq_total",
			"http.outbound_backend.downstream_rq_2xx", "cluster.backend.upstream_rq_total"} {
			Eventually(func() string { return statValue(s, name) }).Should(Equal("1"), name)
		}
	})
})
