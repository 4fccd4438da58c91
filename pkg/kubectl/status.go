package kubectl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// statusWorkers bounds the pods asked at once.
const statusWorkers = 8

// statusCommand is `status [-A]`.
func statusCommand() command {
	return command{
		name:    "status",
		usage:   "[-A]",
		summary: "list the injected pods of the namespace (or all, -A) with their proxy's version, readiness, config age and last drain",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
		},
		needsCluster: true,
		run:          runStatus,
	}
}

// podStatus is one row of the status table.
type podStatus struct {
	pod                                      *corev1.Pod
	version, state, ready, uptime, configAge string
	drain                                    string
	err                                      error
}

// runStatus asks every pod with the proxy container for its state.
func runStatus(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("status: takes no arguments, got %q", args)
	}
	ns := a.kube.namespace
	if a.opts.allNamespaces {
		ns = metav1.NamespaceAll
	}
	list, err := a.kube.pods.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var rows []*podStatus
	for i := range list.Items {
		p := &list.Items[i]
		if adminclient.HasContainer(p, a.opts.container) {
			rows = append(rows, &podStatus{pod: p})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].pod.Namespace != rows[j].pod.Namespace {
			return rows[i].pod.Namespace < rows[j].pod.Namespace
		}
		return rows[i].pod.Name < rows[j].pod.Name
	})
	if len(rows) == 0 {
		where := "namespace " + a.kube.namespace
		if a.opts.allNamespaces {
			where = "any namespace"
		}
		_, err := fmt.Fprintf(a.stderr, "no pod with a %q container in %s\n", a.opts.container, where)
		return err
	}
	drains, err := a.lastDrains(ctx, ns)
	if err != nil {
		// The survey of the proxies stands without the drain records.
		fmt.Fprintf(a.stderr, "warning: no drain records: %v\n", err)
	}
	sem := make(chan struct{}, statusWorkers)
	var wg sync.WaitGroup
	for _, r := range rows {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if d, ok := drains[r.pod.UID]; ok {
				r.drain = d.String(a.now())
			}
			a.probe(ctx, r)
		}()
	}
	wg.Wait()
	return a.statusTable(rows)
}

// probe fills a row from the pod's admin interface.
func (a *app) probe(ctx context.Context, r *podStatus) {
	if r.pod.Status.Phase != corev1.PodRunning {
		r.state = "pod " + phase(r.pod)
		return
	}
	t, err := a.open(ctx, r.pod)
	if err != nil {
		r.state, r.err = "unreachable", err
		return
	}
	defer t.close()
	info, err := t.get(ctx, "/server_info", nil)
	if err != nil {
		r.state, r.err = "unreachable", err
		return
	}
	var si struct {
		Version string `json:"version"`
		State   string `json:"state"`
		Uptime  string `json:"uptime_current_epoch"`
	}
	if err := json.Unmarshal(info, &si); err != nil {
		r.state, r.err = "?", fmt.Errorf("pod %s/%s: parse /server_info: %w", r.pod.Namespace, r.pod.Name, err)
		return
	}
	r.version, r.state = shortVersion(si.Version), si.State
	if up, err := time.ParseDuration(si.Uptime); err == nil {
		r.uptime = age(up)
	}
	// /ready answers 503 when the proxy is not LIVE: that is the answer.
	_, err = t.session.Get(ctx, "/ready", nil)
	var se *adminclient.StatusError
	switch {
	case err == nil:
		r.ready = "true"
	case errors.As(err, &se) && se.Code == http.StatusServiceUnavailable:
		r.ready = "false"
	default:
		r.err = t.wrap(err)
	}
	dump, err := t.get(ctx, "/config_dump", nil)
	if err != nil {
		r.err = errors.Join(r.err, err)
		return
	}
	if last, ok := latestUpdate(dump); ok {
		r.configAge = age(a.now().Sub(last))
	}
	if r.drain == "" {
		r.drain = stoppedListeners(ctx, t)
	}
}

// shortVersion is the release of a /server_info version
// (<revision>/<release>/<tree>/<mode>/<tls>), with the revision's start.
func shortVersion(v string) string {
	parts := strings.Split(v, "/")
	if len(parts) < 2 {
		return v
	}
	rev := parts[0]
	if len(rev) > 7 {
		rev = rev[:7]
	}
	return parts[1] + " (" + rev + ")"
}

// latestUpdate is the newest last_updated of a /config_dump answer: when
// the configuration last changed (the bootstrap's when nothing came later).
func latestUpdate(dump []byte) (time.Time, bool) {
	var doc any
	if err := json.Unmarshal(dump, &doc); err != nil {
		return time.Time{}, false
	}
	var latest time.Time
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "last_updated" {
					if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(latest) {
						latest = t
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return latest, !latest.IsZero()
}

// stoppedListeners reports listeners stopped through the admin interface
// (listener_manager.listener_stopped), which a drain without a ProxyDrain
// leaves as its only trace.
func stoppedListeners(ctx context.Context, t *target) string {
	body, err := t.get(ctx, "/stats", url.Values{"filter": {`^listener_manager\.listener_stopped$`}})
	if err != nil {
		return ""
	}
	_, v, ok := strings.Cut(strings.TrimSpace(string(body)), ": ")
	if !ok || v == "0" {
		return ""
	}
	return "listeners stopped: " + v
}

// statusTable prints the rows, and each row's error on stderr; an error
// makes the command fail once the table is out.
func (a *app) statusTable(rows []*podStatus) error {
	header := []string{"POD", "VERSION", "STATE", "READY", "UPTIME", "CONFIG AGE", "LAST DRAIN"}
	if a.opts.allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	tab := newTable(a.stdout, header...)
	var errs []error
	for _, r := range rows {
		cells := []string{r.pod.Name, r.version, r.state, r.ready, r.uptime, r.configAge, r.drain}
		if a.opts.allNamespaces {
			cells = append([]string{r.pod.Namespace}, cells...)
		}
		tab.row(cells...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if err := tab.flush(); err != nil {
		return err
	}
	return errors.Join(errs...)
}
