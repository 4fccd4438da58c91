package kubectl

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// target is an open admin session to one pod's proxy.
type target struct {
	endpoint  adminclient.Endpoint
	transport string
	session   *adminclient.Session
}

// openPod reads the named pod of the command's namespace and opens a
// session to its proxy's admin interface.
func (a *app) openPod(ctx context.Context, name string) (*target, error) {
	p, err := a.kube.pod(ctx, name)
	if err != nil {
		return nil, err
	}
	return a.open(ctx, p)
}

// open opens a session to the admin interface of p's proxy. A pod without
// the proxy container, with a bad admin-port annotation or not running is
// an error that says so; no connection is tried.
func (a *app) open(ctx context.Context, p *corev1.Pod) (*target, error) {
	ep, err := proxyEndpoint(p, a.opts.container)
	if err != nil {
		return nil, err
	}
	t := &target{endpoint: ep, transport: a.opts.transport}
	s, err := a.kube.admin.Session(ctx, ep)
	if err != nil {
		return nil, t.unreachable(err)
	}
	t.session = s
	return t, nil
}

// proxyEndpoint is the admin endpoint of p's proxy, or why p has none.
func proxyEndpoint(p *corev1.Pod, container string) (adminclient.Endpoint, error) {
	name := p.Namespace + "/" + p.Name
	if !adminclient.HasContainer(p, container) {
		return adminclient.Endpoint{}, fmt.Errorf("pod %s has no proxy: no container %q (containers: %s) and so no admin interface to reach; "+
			"pods get one when injected (label proxy.outrigger.dev/inject=true), or pass --container if the proxy container has another name",
			name, container, containerNames(p))
	}
	ep, err := adminclient.PodEndpoint(p)
	if err != nil {
		return ep, fmt.Errorf("pod %s: %w", name, err)
	}
	if p.Status.Phase != corev1.PodRunning {
		return ep, fmt.Errorf("pod %s is %s, not Running: its proxy cannot be reached", name, phase(p))
	}
	return ep, nil
}

// containerNames lists p's containers for an error message.
func containerNames(p *corev1.Pod) string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}

// phase is the pod's phase, "Unknown" when the kubelet has not reported one.
func phase(p *corev1.Pod) string {
	if p.Status.Phase == "" {
		return string(corev1.PodUnknown)
	}
	return string(p.Status.Phase)
}

// close releases the session.
func (t *target) close() {
	if t.session != nil {
		_ = t.session.Close()
	}
}

// get makes a GET admin call.
func (t *target) get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	body, err := t.session.Get(ctx, path, query)
	return body, t.wrap(err)
}

// wrap names the pod in an admin call's error: an answer other than 200
// is the proxy's refusal, anything else means the admin interface was not
// reached.
func (t *target) wrap(err error) error {
	if err == nil {
		return nil
	}
	var se *adminclient.StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("pod %s/%s: the proxy refused %s %s: %d: %s", t.endpoint.Namespace, t.endpoint.Pod, se.Method, se.Path, se.Code, se.Body)
	}
	return t.unreachable(err)
}

// unreachable is the error of an admin interface that could not be reached.
func (t *target) unreachable(err error) error {
	return fmt.Errorf("cannot reach the admin interface of pod %s/%s on port %d (the pod's %s annotation, default %d) through transport %s: %w",
		t.endpoint.Namespace, t.endpoint.Pod, t.endpoint.Port, v1alpha1.AdminPortAnnotation, v1alpha1.DefaultAdminPort, t.transport, err)
}
