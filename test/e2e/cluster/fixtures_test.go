package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// repoRoot is the repository's root folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// binary is a built binary named by an environment variable, or bin/<name>.
func binary(env, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(repoRoot(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		Fail(fmt.Sprintf("no %s binary: set %s or run make test-cluster", name, env))
	}
	return p
}

// controllerUser is the identity the controller binary runs as; it only
// has the role config/rbac/role.yaml grants.
const controllerUser = "outrigger-controller"

// leaseNamespace holds the controller's leader election Lease.
const leaseNamespace = "outrigger-system"

// clusterFixture is the API server and the clients of the suite.
type clusterFixture struct {
	env        *envtest.Environment
	c          client.WithWatch
	dir        string
	kubeconfig string
}

// startCluster starts kube-apiserver and etcd with the CRDs, and creates the
// controller's user, bound to the generated role.
func startCluster() *clusterFixture {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot(), "bin", "test-assets")
	}
	Expect(filepath.Join(assets, "kube-apiserver")).To(BeAnExistingFile(), "run make test-assets, or set KUBEBUILDER_ASSETS")
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred(), "start the API server")
	f := &clusterFixture{env: env, dir: GinkgoT().TempDir()}
	scheme := kruntime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	f.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(raw, role)).To(Succeed())
	Expect(f.c.Create(ctx, role)).To(Succeed())
	Expect(f.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}},
	})).To(Succeed())
	Expect(f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}})).To(Succeed())

	user, err := env.AddUser(envtest.User{Name: controllerUser}, cfg)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	f.kubeconfig = filepath.Join(f.dir, "controller.kubeconfig")
	Expect(os.WriteFile(f.kubeconfig, kc, 0o600)).To(Succeed())
	return f
}

func (f *clusterFixture) stop() {
	Expect(f.env.Stop()).To(Succeed())
}

// namespace creates a namespace for one spec.
func (f *clusterFixture) namespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "spec-"}}
	Expect(f.c.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// controllerProcess is the controller binary.
type controllerProcess struct {
	bin  string
	args []string
	dir  string
	name string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
}

// startController runs the suite's controller binary: the direct
// transport, leader election on, short intervals, and no injection webhook
// (its serving certificate and the API server's call to it are tested in
// pkg/controller/inject).
func startController(f *clusterFixture) *controllerProcess {
	c := newController(f, "controller", f.kubeconfig)
	c.start()
	return c
}

// newController is a controller binary (not started) named name (its
// logs are <name>-<n>.log), reaching the API server with kubeconfig; extra
// flags come after the suite's and win over them.
func newController(f *clusterFixture, name, kubeconfig string, extra ...string) *controllerProcess {
	return &controllerProcess{
		bin:  binary("CONTROLLER_BIN", "controller"),
		dir:  f.dir,
		name: name,
		args: append([]string{
			"--kubeconfig", kubeconfig,
			"--transport=direct",
			"--leader-election-namespace", leaseNamespace,
			"--metrics-bind-address=0",
			"--health-probe-bind-address=127.0.0.1:0",
			"--recheck-interval=500ms",
			"--poll-interval=200ms",
			"--admin-timeout=2s",
			"--log-level=debug",
			"--webhook-port=0",
		}, extra...),
	}
}

// start runs the binary, its output in <name>-<n>.log.
func (c *controllerProcess) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts++
	logPath := c.logPath(c.starts)
	out, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(c.bin, c.args...)
	cmd.Stdout, cmd.Stderr = out, out
	Expect(cmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	c.cmd, c.done = cmd, done
	GinkgoWriter.Printf("%s started (pid %d), log %s\n", c.name, cmd.Process.Pid, logPath)
}

// logPath is the log of the n-th start.
func (c *controllerProcess) logPath(n int) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%d.log", c.name, n))
}

// log is the output of the current (or last) process.
func (c *controllerProcess) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := os.ReadFile(c.logPath(c.starts))
	return string(b)
}

// stop ends the controller with SIGTERM (it releases its lease), killing
// it after 20 s.
func (c *controllerProcess) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// kill ends the controller with SIGKILL, as a crash or a lost node would:
// it releases nothing.
func (c *controllerProcess) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	c.cmd = nil
}

// pid is the current process's id (0 when stopped).
func (c *controllerProcess) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// exited reports whether the process started last has ended on its own.
func (c *controllerProcess) exited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// proxy is a sidecar process standing in for one pod's proxy.
type proxy struct {
	ip         string
	adminPort  int
	listenPort int
	config     string
	log        string
	accessLog  string
	// adminSocket, when set, is the admin interface's pipe (a unix
	// domain socket), as Contour's bootstrap puts it, in place of
	// ip:adminPort; args are more command-line options.
	adminSocket string
	args        []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// addresses hands out loopback addresses to proxies, one each.
var addresses struct {
	sync.Mutex
	used int
}

// nextIP is the next unused loopback address: 127.0.0.2 to 127.0.0.251,
// then 127.0.1.2, ... (Linux routes all of 127/8 to the loopback
// interface).
func nextIP() string {
	addresses.Lock()
	defer addresses.Unlock()
	n := addresses.used
	addresses.used++
	return fmt.Sprintf("127.0.%d.%d", n/250, n%250+2)
}

// freePort finds a free port on ip.
func freePort(ip string) int { return freePorts(ip, 1)[0] }

// freePorts finds n distinct free ports on ip. The listeners stay open
// until all are found: one closed before the next is opened may be handed
// out again, and a sidecar given the same port for its admin and its
// listener fails to start.
func freePorts(ip string, n int) []int {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		Expect(err).NotTo(HaveOccurred(), "loopback address %s is not bindable", ip)
		defer func() { _ = ln.Close() }()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// bootstrapTemplate is a sidecar's configuration: the admin interface and an
// INBOUND listener on the proxy's address, with a health-check filter on
// /healthz when the sidecar supports it, and a runtime admin layer.
var bootstrapTemplate = template.Must(template.New("bootstrap").Parse(`admin:
  access_log_path: "{{.AccessLog}}"
  address:
    socket_address: {address: "{{.IP}}", port_value: {{.AdminPort}}}
layered_runtime:
  layers:
  - name: static
    static_layer: {"existing.key": "static"}
  - name: admin
    admin_layer: {}
static_resources:
  listeners:
  - name: ingress
    traffic_direction: INBOUND
    address:
      socket_address: {address: "{{.IP}}", port_value: {{.ListenPort}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /}
                direct_response: {status: 200, body: {inline_string: "hello"}}
          http_filters:
{{- if .HealthCheck}}
          - name: envoy.filters.http.health_check
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck
              pass_through_mode: false
              headers:
              - name: ":path"
                string_match: {exact: /healthz}
{{- end}}
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`))

// newProxy writes a configuration for a new loopback address; start runs
// it.
func newProxy(healthCheck bool) *proxy {
	ip := nextIP()
	ports := freePorts(ip, 2)
	p := &proxy{ip: ip, adminPort: ports[0], listenPort: ports[1]}
	dir := GinkgoT().TempDir()
	p.config = filepath.Join(dir, "bootstrap.yaml")
	p.log = filepath.Join(dir, "sidecar.log")
	p.accessLog = filepath.Join(dir, "admin_access.log")
	var b bytes.Buffer
	Expect(bootstrapTemplate.Execute(&b, map[string]any{
		"IP": ip, "AdminPort": p.adminPort, "ListenPort": p.listenPort, "HealthCheck": healthCheck, "AccessLog": p.accessLog,
	})).To(Succeed())
	Expect(os.WriteFile(p.config, b.Bytes(), 0o644)).To(Succeed())
	return p
}

// startProxy starts a new proxy and stops it when the spec ends.
func startProxy() *proxy {
	p := newProxy(feats.healthCheckFilter)
	p.start()
	DeferCleanup(p.stop)
	return p
}

// start runs the sidecar and waits (at most 20 s: the CI machine has two
// busy cores) for its admin interface.
func (p *proxy) start() {
	p.mu.Lock()
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	// The admin access log, which tells how often an endpoint was
	// called, is flushed every 50 ms rather than every 10 s.
	cmd := exec.Command(binary("SIDECAR_BIN", "sidecar"), "-c", p.config, "--log-level", "warning", "--file-flush-interval-msec", "50",
		// Several pods run on this host: no hot-restart socket to share.
		"--disable-hot-restart")
	cmd.Args = append(cmd.Args, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	Expect(cmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	Eventually(func() error {
		select {
		case <-done:
			return StopTrying("the sidecar exited")
		default:
		}
		_, _, err := p.admin(http.MethodGet, "/ready")
		return err
	}).WithTimeout(20*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(), func() string {
		// The log lives in the spec's temporary folder, which is gone by
		// the time anyone reads the report: its end goes into the report.
		b, _ := os.ReadFile(p.log)
		if len(b) > 4096 {
			b = b[len(b)-4096:]
		}
		return fmt.Sprintf("sidecar on %s did not start; the end of its log:\n%s", p.ip, b)
	})
}

// stop ends the sidecar (SIGINT, its immediate clean shutdown, then SIGKILL
// after 10 s).
func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// restart stops and starts the sidecar: a new process, with none of the
// old one's admin changes.
func (p *proxy) restart() {
	p.stop()
	p.start()
}

// crash kills the sidecar (SIGKILL) and starts a new one, as a container
// that crashed and was restarted.
func (p *proxy) crash() {
	p.mu.Lock()
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.cmd = nil
	}
	p.mu.Unlock()
	p.start()
}

// admin makes one admin call and returns the body and status code.
func (p *proxy) admin(method, path string) (string, int, error) {
	host := net.JoinHostPort(p.ip, strconv.Itoa(p.adminPort))
	c := http.Client{Timeout: 5 * time.Second}
	if p.adminSocket != "" {
		host = "admin"
		c.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.adminSocket)
		}}
	}
	req, err := http.NewRequest(method, fmt.Sprintf("http://%s%s", host, path), nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode, err
}

// runtimeValue is a runtime key's final value in /runtime, "" if absent.
func (p *proxy) runtimeValue(key string) (string, error) {
	body, code, err := p.admin(http.MethodGet, "/runtime")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("/runtime answered %d: %s", code, body)
	}
	var doc struct {
		Entries map[string]struct {
			FinalValue string `json:"final_value"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return "", fmt.Errorf("/runtime: %w", err)
	}
	return doc.Entries[key].FinalValue, nil
}

// ready is the admin /ready status code.
func (p *proxy) ready() (int, error) {
	_, code, err := p.admin(http.MethodGet, "/ready")
	return code, err
}

// healthz is the listener's /healthz status code (the health-check filter).
func (p *proxy) healthz() (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/healthz", net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort))))
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// adminCalls counts the admin requests of a method and path in the
// sidecar's admin access log, across restarts. The log is flushed every
// 50 ms: wait that long after a call before counting it.
func (p *proxy) adminCalls(method, path string) int {
	raw, err := os.ReadFile(p.accessLog)
	if os.IsNotExist(err) {
		return 0
	}
	Expect(err).NotTo(HaveOccurred())
	return strings.Count(string(raw), `"`+method+" "+path)
}

// listenerRefuses reports whether the listener refuses connections.
func (p *proxy) listenerRefuses() bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort)), time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

// createPod creates a pod for the proxy, labelled app=<app>, and patches
// its status as a kubelet would: Running, Ready, the proxy's address as
// pod IP.
func createPod(ctx context.Context, ns, name, app string, p *proxy) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, Labels: map[string]string{"app": app},
			Annotations: map[string]string{v1alpha1.AdminPortAnnotation: strconv.Itoa(p.adminPort)},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "example/app"},
			{Name: "proxy", Image: "outrigger/sidecar"},
		}},
	}
	Expect(cluster.c.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	Expect(cluster.c.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// features records what the sidecar under test implements, so that a spec
// fails with a clear reason when the binary lacks a part it drives.
type features struct {
	healthCheckFilter bool
	drainListeners    bool
	listenerStats     bool
}

// probeFeatures validates a configuration with the health-check filter and
// asks a running sidecar for its admin endpoints and listener stats.
func probeFeatures() features {
	var f features
	withFilter := newProxy(true)
	out, err := exec.Command(binary("SIDECAR_BIN", "sidecar"), "--mode", "validate", "-c", withFilter.config).CombinedOutput()
	f.healthCheckFilter = err == nil
	if !f.healthCheckFilter {
		GinkgoWriter.Printf("the sidecar refuses the health-check filter: %s\n", out)
	}
	p := newProxy(f.healthCheckFilter)
	p.start()
	defer p.stop()
	help, _, err := p.admin(http.MethodGet, "/help")
	Expect(err).NotTo(HaveOccurred())
	f.drainListeners = strings.Contains(help, "/drain_listeners")
	stats, code, err := p.admin(http.MethodGet, `/stats?format=json&filter=^listener\..*\.downstream_cx_active$`)
	f.listenerStats = err == nil && code == http.StatusOK && strings.Contains(stats, "downstream_cx_active")
	GinkgoWriter.Printf("sidecar features: %+v\n", f)
	return f
}

// need fails the spec when the sidecar lacks a feature.
func need(ok bool, what string) {
	GinkgoHelper()
	if !ok {
		Fail("the sidecar under test does not implement " + what)
	}
}
