package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/portforwardtest"
)

// pluginUser is the identity the plugin runs as: it has only the role
// docs/debugging.md tells people the plugin needs.
const pluginUser = "outrigger-debugger"

// pluginRole is that role.
var pluginRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
	{APIGroups: []string{"proxy.outrigger.dev"}, Resources: []string{"proxydrains"}, Verbs: []string{"get", "list"}},
}

// pluginFixture is what the plugin binary runs against.
//
// The cluster tier has a real kube-apiserver but no kubelet, so the API
// server cannot serve pods/portforward. The plugin's API server is
// therefore a front on a loopback port: pods/portforward requests go to
// portforwardtest (an API server and kubelet pair serving the subresource
// the real way, with the container runtime's dial replaced by a dial to
// the sidecar's loopback address standing in for the pod), everything else
// goes to the real kube-apiserver with the plugin user's credentials. The
// default port-forward transport is thus driven end to end, from the
// kubeconfig to the sidecar; --transport direct dials the pod IP (the
// sidecar's address) and is tested too.
type pluginFixture struct {
	bin        string
	kubeconfig string
	forwarder  *portforwardtest.Server

	mu   sync.Mutex
	pods map[string]string // namespace/name -> the sidecar's address
}

// startPluginFixture creates the plugin user and its role, the front and
// a kubeconfig whose current context points nowhere (every run passes
// --context, which must win).
func startPluginFixture(ctx context.Context) *pluginFixture {
	f := &pluginFixture{bin: binary("PLUGIN_BIN", "kubectl-outrigger"), pods: map[string]string{}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: pluginUser}, Rules: pluginRole}
	Expect(cluster.c.Create(ctx, role)).To(Succeed())
	Expect(cluster.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: pluginUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: pluginUser}},
	})).To(Succeed())
	user, err := cluster.env.AddUser(envtest.User{Name: pluginUser}, cluster.env.Config)
	Expect(err).NotTo(HaveOccurred())
	apiTransport, err := rest.TransportFor(user.Config())
	Expect(err).NotTo(HaveOccurred())
	apiURL, err := url.Parse(user.Config().Host)
	Expect(err).NotTo(HaveOccurred())

	f.forwarder, err = portforwardtest.New(portforwardtest.Options{Dial: f.dialPod})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.forwarder.Close)
	forwarderURL, err := url.Parse(f.forwarder.Config().Host)
	Expect(err).NotTo(HaveOccurred())

	toAPI := httputil.NewSingleHostReverseProxy(apiURL)
	toAPI.Transport = apiTransport
	toForwarder := httputil.NewSingleHostReverseProxy(forwarderURL)
	portForward := regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods/[^/]+/portforward$`)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if portForward.MatchString(r.URL.Path) {
			toForwarder.ServeHTTP(w, r)
			return
		}
		toAPI.ServeHTTP(w, r)
	}))
	DeferCleanup(front.Close)

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["front"] = &clientcmdapi.Cluster{Server: front.URL}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "http://127.0.0.1:1"}
	cfg.AuthInfos["debugger"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["plugin"] = &clientcmdapi.Context{Cluster: "front", AuthInfo: "debugger", Namespace: "not-this-one"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "debugger"}
	cfg.CurrentContext = "nowhere"
	f.kubeconfig = filepath.Join(cluster.dir, "plugin.kubeconfig")
	Expect(clientcmd.WriteToFile(*cfg, f.kubeconfig)).To(Succeed())
	return f
}

// dialPod stands in for the container runtime: it reaches the port inside
// a pod, here on the address of the sidecar standing in for the pod.
func (f *pluginFixture) dialPod(ctx context.Context, namespace, pod string, port int32) (net.Conn, error) {
	f.mu.Lock()
	ip, ok := f.pods[namespace+"/"+pod]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no sidecar", namespace, pod)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
}

// forwardTo has port-forwards to the pod reach ip.
func (f *pluginFixture) forwardTo(namespace, pod, ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[namespace+"/"+pod] = ip
}

// pluginRun is the outcome of one run of the plugin binary.
type pluginRun struct {
	stdout, stderr string
	code           int
}

// run runs the plugin in namespace ns (the -n flag; none when ns is "")
// with the suite's kubeconfig and context, for at most 30 s.
func (f *pluginFixture) run(ns string, args ...string) pluginRun {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := f.command(ctx, ns, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := pluginRun{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		Expect(ok).To(BeTrue(), "run %v: %v", args, err)
		r.code = exitErr.ExitCode()
	}
	GinkgoWriter.Printf("$ kubectl-outrigger %v\n%s%s(exit %d)\n", args, r.stdout, r.stderr, r.code)
	return r
}

// command is the plugin's command line in namespace ns (the -n flag; none
// when ns is "") with the suite's kubeconfig and context.
func (f *pluginFixture) command(ctx context.Context, ns string, args []string) *exec.Cmd {
	full := []string{"--kubeconfig", f.kubeconfig, "--context", "plugin", "--admin-timeout", "5s"}
	if ns != "" {
		full = append(full, "-n", ns)
	}
	cmd := exec.CommandContext(ctx, f.bin, append(full, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	return cmd
}

// pluginProcess is a run of the plugin that goes on while the spec acts
// (a tap stream); it is killed when the spec ends, at the latest after
// 60 s.
type pluginProcess struct {
	args           []string
	stdout, stderr lockedBuffer
	done           chan struct{}
	cmd            *exec.Cmd
	code           int
}

// start runs the plugin in namespace ns without waiting for it.
func (f *pluginFixture) start(ns string, args ...string) *pluginProcess {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	p := &pluginProcess{args: args, done: make(chan struct{}), cmd: f.command(ctx, ns, args)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	Expect(p.cmd.Start()).To(Succeed())
	go func() {
		defer close(p.done)
		defer cancel()
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
	}()
	DeferCleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// exited reports whether the process has ended.
func (p *pluginProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits (at most 10 s) for the process to end and returns its exit
// code.
func (p *pluginProcess) wait() int {
	GinkgoHelper()
	Eventually(p.done).WithTimeout(10*time.Second).Should(BeClosed(), "kubectl-outrigger %v did not end", p.args)
	GinkgoWriter.Printf("$ kubectl-outrigger %v\n%s%s(exit %d)\n", p.args, p.stdout.String(), p.stderr.String(), p.code)
	return p.code
}

// interrupt sends SIGINT, as ^C does, and waits for the process to end.
func (p *pluginProcess) interrupt() int {
	GinkgoHelper()
	Expect(p.cmd.Process.Signal(os.Interrupt)).To(Succeed())
	return p.wait()
}

// lockedBuffer is a bytes.Buffer that a process writes while the spec
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// ok runs the plugin and expects it to succeed; it returns stdout.
func (f *pluginFixture) ok(ns string, args ...string) string {
	GinkgoHelper()
	r := f.run(ns, args...)
	Expect(r.code).To(Equal(0), "kubectl-outrigger %v failed: %s", args, r.stderr)
	return r.stdout
}
