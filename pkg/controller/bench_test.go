package controller_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/admintest"
)

// benchIP is the loopback address of the i-th pod of a benchmark's fleet:
// 127.0.100.1 to 127.0.100.250, then 127.0.101.1, ...
func benchIP(i int) string {
	return fmt.Sprintf("127.0.%d.%d", 100+i/250, i%250+1)
}

// benchFleet starts n fake admin interfaces, each on its own loopback
// address at the default admin port 9901, and creates a running pod
// labelled app=fleet for each.
func benchFleet(b *testing.B, h *harness, n int) []*admintest.Server {
	fakes := make([]*admintest.Server, n)
	for i := range n {
		ip := benchIP(i)
		fake, err := admintest.New(ip+":"+strconv.Itoa(v1alpha1.DefaultAdminPort), nil)
		if err != nil {
			b.Fatalf("%v (the benchmark needs %s:9901 free)", err, ip)
		}
		b.Cleanup(fake.Close)
		fakes[i] = fake
		h.createPod(fmt.Sprintf("pod-%03d", i), map[string]string{"app": "fleet"}, strconv.Itoa(v1alpha1.DefaultAdminPort), ip)
	}
	return fakes
}

// rollout creates an override of the fleet and waits until every tracked
// pod (at most MaxTargets) has it, returning how long that took.
func rollout(b *testing.B, h *harness, run, pods int, maxConcurrent int32) time.Duration {
	o := &v1alpha1.ProxyRuntimeOverride{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-" + strconv.Itoa(run), Namespace: h.ns},
		Spec: v1alpha1.ProxyRuntimeOverrideSpec{
			Target:  target("fleet"),
			Rollout: v1alpha1.Rollout{MaxConcurrent: maxConcurrent},
			// Each run sets its own key, so no two runs conflict.
			Runtime:  map[string]string{"bench.run" + strconv.Itoa(run): "on"},
			OnDelete: v1alpha1.OnDeleteKeep,
		},
	}
	want := int32(min(pods, v1alpha1.MaxTargets))
	start := time.Now()
	if err := h.c.Create(b.Context(), o); err != nil {
		b.Fatal(err)
	}
	for {
		if err := h.get(o); err != nil {
			b.Fatal(err)
		}
		if o.Status.Succeeded == want && meta.IsStatusConditionFalse(o.Status.Conditions, v1alpha1.ConditionProgressing) {
			return time.Since(start)
		}
		if time.Since(start) > 3*time.Minute {
			b.Fatalf("not applied to every pod after 3 minutes: %+v", o.Status.Counters)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkRuntimeOverrideRollout measures the time from applying a
// ProxyRuntimeOverride to all of 200 pods Applied, with maxConcurrent 50,
// each pod's proxy a fake admin interface on its own loopback address
// (127.0.100.1 to 127.0.100.200, the default admin port 9901) reached with
// the direct transport. Creating the pods is not timed.
func BenchmarkRuntimeOverrideRollout(b *testing.B) {
	const pods = 200
	h := newHarness(b)
	benchFleet(b, h, pods)
	opts := controller.Options{Admin: adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)}
	h.startController(opts)
	var total time.Duration
	n := 0
	for b.Loop() {
		total += rollout(b, h, n, pods, 50)
		n++
	}
	b.ReportMetric(total.Seconds()/float64(n), "s/rollout")
}

// BenchmarkLargeRollout rolls an override out to 500 pods (256 of them
// tracked and worked on, the most a resource holds) with maxConcurrent 10
// and 1, and reports with the time of a rollout the status writes it took,
// the time spent in admin calls (summed over the calls: with
// maxConcurrent 1 they are made one after the other), and the time of one
// admin round trip (a /server_info call on the same fakes, the median of
// 200) against which a rollout is judged: 500 round trips plus a small
// constant, for maxConcurrent 1.
func BenchmarkLargeRollout(b *testing.B) {
	const pods = 500
	for _, mc := range []int32{10, 1} {
		b.Run(fmt.Sprintf("pods=%d/maxConcurrent=%d", pods, mc), func(b *testing.B) {
			h := newHarness(b)
			fakes := benchFleet(b, h, pods)
			rtt := roundTrip(b, fakes[0])
			opts, reg := withMetrics(b, controller.Options{})
			opts.Admin = adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second, adminclient.WithObserver(opts.Metrics.AdminObserver()))
			h.startController(opts)
			var total time.Duration
			n := 0
			for b.Loop() {
				total += rollout(b, h, n, pods, mc)
				n++
			}
			per := total / time.Duration(n)
			writes := metric(b, reg, "outrigger_controller_status_writes_total", "kind=ProxyRuntimeOverride") / float64(n)
			admin := metric(b, reg, "outrigger_controller_admin_call_duration_seconds") / float64(n)
			b.ReportMetric(per.Seconds(), "s/rollout")
			b.ReportMetric(writes, "status-writes/rollout")
			b.ReportMetric(admin, "admin-call-s/rollout")
			b.ReportMetric(float64(rtt.Microseconds())/1000, "ms/admin-rtt")
			b.ReportMetric(per.Seconds()/(pods*rtt.Seconds()), "rollout/(500×rtt)")
		})
	}
}

// roundTrip is the median time of a /server_info call on fake, over a
// session kept open as the reconcilers do.
func roundTrip(b *testing.B, fake *admintest.Server) time.Duration {
	c := adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)
	s, err := c.Session(b.Context(), adminclient.Endpoint{Namespace: "bench", Pod: "rtt", IP: fake.IP(), Port: fake.Port()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	times := make([]time.Duration, 200)
	for i := range times {
		start := time.Now()
		if _, err := s.ServerInfo(b.Context()); err != nil {
			b.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[len(times)/2]
}
