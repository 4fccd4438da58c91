package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Contour (Project Contour, an Envoy control plane) is run as it runs in
// a cluster: `contour serve` watching the test's API server and serving
// xDS, and the sidecar started with the bootstrap `contour bootstrap`
// writes, unchanged, and the command line of Contour's Envoy DaemonSet.
var _ = Describe("Contour control plane", func() {
	It("configures the sidecar over xDS from HTTPProxy, Service and EndpointSlice objects", func(ctx SpecContext) {
		bin := binary("CONTOUR_BIN", filepath.Join("tools", "contour"))
		installContourCRDs(filepath.Join(filepath.Dir(bin), "contour-crds.yaml"))
		ns := cluster.namespace(ctx)

		a, b, c := startNamedUpstream("upstream-a"), startNamedUpstream("upstream-b"), startNamedUpstream("upstream-c")
		createServiceWithSlice(ctx, ns, "svc-a", a)
		createServiceWithSlice(ctx, ns, "svc-b", b)
		proxyObj := httpProxy(ns, "app", "app.example.com", "svc-a")
		Expect(cluster.c.Create(ctx, proxyObj)).To(Succeed())

		cp := startContour(bin)
		p := cp.sidecar(ns)

		By("traffic flows through the listener, route, cluster and endpoints Contour sent")
		Eventually(func() (string, error) { return getThrough(p.ip, cp.httpPort, "app.example.com") }).
			WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Equal("upstream-a"), cp.logs)
		Expect(p.ready()).To(Equal(http.StatusOK))

		By("the dynamic resources carry Contour's versions in /config_dump")
		dump := configDump(p)
		clusterName := ns + "/svc-a/80/da39a3ee5e"
		Expect(dump.clusters).To(HaveKeyWithValue(clusterName, Not(BeEmpty())))
		Expect(dump.listeners).To(HaveKeyWithValue("ingress_http", Not(BeEmpty())))
		Expect(dump.routes).To(HaveKeyWithValue("ingress_http", Not(BeEmpty())))
		routeVersion := dump.routes["ingress_http"]

		By("/clusters marks Contour's clusters added_via_api, with the EDS endpoint")
		clusters, _, err := p.admin(http.MethodGet, "/clusters")
		Expect(err).NotTo(HaveOccurred())
		Expect(clusters).To(ContainSubstring(clusterName + "::added_via_api::true"))
		Expect(clusters).To(ContainSubstring(clusterName + "::" + a + "::"))
		Expect(clusters).To(ContainSubstring("contour::added_via_api::false"))

		By("the RTDS layer holds Contour's runtime values")
		Expect(p.runtimeValue("re2.max_program_size.error_level")).To(Equal(strconv.Itoa(1 << 20)))

		By("Contour's stats listener reaches the admin interface through the envoy-admin pipe cluster")
		Eventually(func() (string, error) { return getThrough(p.ip, cp.statsPort, "") }).
			WithTimeout(20 * time.Second).Should(Equal("LIVE\n"))

		By("a changed HTTPProxy route takes effect")
		Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(proxyObj), proxyObj)).To(Succeed())
		Expect(unstructured.SetNestedSlice(proxyObj.Object, httpProxyRoutes("svc-b"), "spec", "routes")).To(Succeed())
		Expect(cluster.c.Update(ctx, proxyObj)).To(Succeed())
		Eventually(func() (string, error) { return getThrough(p.ip, cp.httpPort, "app.example.com") }).
			WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal("upstream-b"), cp.logs)
		Expect(configDump(p).routes["ingress_http"]).NotTo(Equal(routeVersion), "the route configuration's version_info moves with Contour's update")

		By("changed endpoints take effect")
		slice := &discoveryv1.EndpointSlice{}
		Expect(cluster.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "svc-b-1"}, slice)).To(Succeed())
		slice.Ports[0].Port = ptr.To(int32(portOf(c)))
		Expect(cluster.c.Update(ctx, slice)).To(Succeed())
		Eventually(func() (string, error) { return getThrough(p.ip, cp.httpPort, "app.example.com") }).
			WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal("upstream-c"), cp.logs)

		By("nothing Contour sent was rejected")
		rejected, _, err := p.admin(http.MethodGet, `/stats?filter=update_rejected$`)
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(strings.TrimSpace(rejected), "\n") {
			Expect(line).To(HaveSuffix(": 0"), "%s\nsidecar log:\n%s", rejected, tail(p.log))
		}
	}, NodeTimeout(4*time.Minute))
})

// installContourCRDs installs Contour's CRDs (once per suite: installing
// them again is harmless).
func installContourCRDs(path string) {
	GinkgoHelper()
	Expect(path).To(BeAnExistingFile(), "run hack/contour.sh (make test-cluster does)")
	_, err := envtest.InstallCRDs(cluster.env.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
}

// startNamedUpstream starts an HTTP server on 127.0.0.1 answering every
// request with its name; it returns its address.
func startNamedUpstream(name string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, name)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// portOf is the port of a host:port.
func portOf(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	Expect(err).NotTo(HaveOccurred())
	n, err := strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// createServiceWithSlice creates a Service (port 80, named http) and the
// EndpointSlice a controller would make for it, its one ready endpoint at
// upstream. The API server refuses loopback addresses in IPv4 slices
// (tests may only use loopback ones): the slice is of type FQDN, whose
// addresses are checked as DNS names, which "127.0.0.1" is, and Contour,
// which reads the addresses whatever the slice's type, sends it as the
// endpoint's IP, as it would a pod's.
func createServiceWithSlice(ctx context.Context, ns, name, upstream string) {
	GinkgoHelper()
	port := int32(portOf(upstream))
	Expect(cluster.c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port),
		}}},
	})).To(Succeed())
	host, _, err := net.SplitHostPort(upstream)
	Expect(err).NotTo(HaveOccurred())
	Expect(cluster.c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-1", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name},
		},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{host},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	})).To(Succeed())
}

// httpProxy is an HTTPProxy for fqdn routing / to service's port 80.
func httpProxy(ns, name, fqdn, service string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "projectcontour.io/v1",
		"kind":       "HTTPProxy",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"virtualhost": map[string]any{"fqdn": fqdn},
			"routes":      httpProxyRoutes(service),
		},
	}}
	return u
}

// httpProxyRoutes is one route of prefix / to service's port 80.
func httpProxyRoutes(service string) []any {
	return []any{map[string]any{
		"conditions": []any{map[string]any{"prefix": "/"}},
		"services":   []any{map[string]any{"name": service, "port": int64(80)}},
	}}
}

// getThrough makes one GET / to ip:port with the Host header host (none
// when empty) and returns the body, an error unless it is a 200.
func getThrough(ip string, port int, host string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/", net.JoinHostPort(ip, strconv.Itoa(port))), nil)
	if err != nil {
		return "", err
	}
	if host != "" {
		req.Host = host
	} else {
		req.URL.Path = "/ready"
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d: %s", resp.StatusCode, body)
	}
	return string(body), nil
}

// contourProcess is `contour serve` on loopback ports of its own, and the
// ports its Envoy listeners are told to use.
type contourProcess struct {
	bin       string
	dir       string
	xdsPort   int
	envoyIP   string
	httpPort  int
	statsPort int
	log       string
	cmd       *exec.Cmd
	done      chan struct{}
}

// startContour runs `contour serve` against the suite's API server, as a
// user of system:masters (Contour's own RBAC is not what is tested), with
// leader election off, plain gRPC, and every listener and port it opens
// or has Envoy open on a dynamic loopback port. It is stopped when the
// spec ends.
func startContour(bin string) *contourProcess {
	dir := GinkgoT().TempDir()
	user, err := cluster.env.AddUser(envtest.User{Name: "contour", Groups: []string{"system:masters"}}, cluster.env.Config)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(dir, "contour.kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())

	envoyIP := nextIP()
	c := &contourProcess{
		bin: bin, dir: dir, xdsPort: freePort("127.0.0.1"), envoyIP: envoyIP,
		httpPort: freePort(envoyIP), statsPort: freePort(envoyIP), log: filepath.Join(dir, "contour.log"),
	}
	out, err := os.Create(c.log)
	Expect(err).NotTo(HaveOccurred())
	port := func(p int) string { return strconv.Itoa(p) }
	c.cmd = exec.Command(bin, "serve",
		"--kubeconfig", kubeconfig,
		"--insecure",
		"--disable-leader-election",
		"--xds-address=127.0.0.1", "--xds-port="+port(c.xdsPort),
		"--envoy-service-http-address="+envoyIP, "--envoy-service-http-port="+port(c.httpPort),
		"--envoy-service-https-address="+envoyIP, "--envoy-service-https-port="+port(freePort(envoyIP)),
		"--stats-address="+envoyIP, "--stats-port="+port(c.statsPort),
		"--http-address=127.0.0.1", "--http-port="+port(freePort("127.0.0.1")),
		"--health-address=127.0.0.1", "--health-port="+port(freePort("127.0.0.1")),
		"--debug-http-address=127.0.0.1", "--debug-http-port="+port(freePort("127.0.0.1")),
	)
	c.cmd.Stdout, c.cmd.Stderr = out, out
	Expect(c.cmd.Start()).To(Succeed())
	c.done = make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		_ = out.Close()
		close(c.done)
	}()
	DeferCleanup(c.stop)
	GinkgoWriter.Printf("contour started (pid %d), log %s\n", c.cmd.Process.Pid, c.log)
	return c
}

// stop ends contour with SIGTERM, killing it after 10 s.
func (c *contourProcess) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// logs is the end of contour's log, for failure messages.
func (c *contourProcess) logs() string {
	return "contour log:\n" + tail(c.log)
}

// sidecar writes the bootstrap with `contour bootstrap` (its admin
// interface on a pipe in the spec's folder) and starts the sidecar with
// it and the options Contour's Envoy DaemonSet passes, stopped when the
// spec ends.
func (c *contourProcess) sidecar(ns string) *proxy {
	boot := filepath.Join(c.dir, "envoy.json")
	sock := filepath.Join(c.dir, "admin.sock")
	out, err := exec.Command(c.bin, "bootstrap", boot,
		"--xds-address=127.0.0.1", "--xds-port="+strconv.Itoa(c.xdsPort),
		"--admin-address="+sock, "--namespace="+ns).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "contour bootstrap: %s", out)
	p := &proxy{
		ip: c.envoyIP, config: boot, log: filepath.Join(c.dir, "sidecar.log"), accessLog: os.DevNull,
		adminSocket: sock,
		// As Contour's DaemonSet writes them: option and value in one
		// argument each.
		args: []string{"--service-cluster " + ns, "--service-node envoy-1"},
	}
	p.start()
	DeferCleanup(p.stop)
	return p
}

// dynamicVersions are the version_info of each dynamic resource in
// /config_dump, by name.
type dynamicVersions struct {
	clusters, listeners, routes map[string]string
}

// configDump reads the dynamic clusters, listeners and route
// configurations of /config_dump.
func configDump(p *proxy) dynamicVersions {
	GinkgoHelper()
	body, code, err := p.admin(http.MethodGet, "/config_dump")
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(http.StatusOK))
	var doc struct {
		Configs []struct {
			DynamicActiveClusters []struct {
				VersionInfo string `json:"version_info"`
				Cluster     struct {
					Name string `json:"name"`
				} `json:"cluster"`
			} `json:"dynamic_active_clusters"`
			DynamicListeners []struct {
				Name        string `json:"name"`
				ActiveState struct {
					VersionInfo string `json:"version_info"`
				} `json:"active_state"`
			} `json:"dynamic_listeners"`
			DynamicRouteConfigs []struct {
				VersionInfo string `json:"version_info"`
				RouteConfig struct {
					Name string `json:"name"`
				} `json:"route_config"`
			} `json:"dynamic_route_configs"`
		} `json:"configs"`
	}
	Expect(json.Unmarshal([]byte(body), &doc)).To(Succeed())
	v := dynamicVersions{clusters: map[string]string{}, listeners: map[string]string{}, routes: map[string]string{}}
	for _, c := range doc.Configs {
		for _, x := range c.DynamicActiveClusters {
			v.clusters[x.Cluster.Name] = x.VersionInfo
		}
		for _, x := range c.DynamicListeners {
			v.listeners[x.Name] = x.ActiveState.VersionInfo
		}
		for _, x := range c.DynamicRouteConfigs {
			v.routes[x.RouteConfig.Name] = x.VersionInfo
		}
	}
	return v
}

// tail is the end of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 8192 {
		b = b[len(b)-8192:]
	}
	return string(b)
}
