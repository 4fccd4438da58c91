package controller_test

import (
	"fmt"
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

// benchPods is the size of the benchmark's fleet.
const benchPods = 200

// BenchmarkRuntimeOverrideRollout measures the time from applying a
// ProxyRuntimeOverride to all of 200 pods Applied, with maxConcurrent 50,
// each pod's proxy a fake admin interface on its own loopback address
// (127.0.100.1 to 127.0.100.200, the default admin port 9901) reached with
// the direct transport. Creating the pods is not timed.
func BenchmarkRuntimeOverrideRollout(b *testing.B) {
	h := newHarness(b)
	for i := range benchPods {
		ip := fmt.Sprintf("127.0.100.%d", i+1)
		fake, err := admintest.New(ip+":"+strconv.Itoa(v1alpha1.DefaultAdminPort), nil)
		if err != nil {
			b.Fatalf("%v (the benchmark needs %s:9901 free)", err, ip)
		}
		b.Cleanup(fake.Close)
		h.createPod(fmt.Sprintf("pod-%03d", i), map[string]string{"app": "fleet"}, strconv.Itoa(v1alpha1.DefaultAdminPort), ip)
	}
	opts := controller.Options{Admin: adminclient.New(adminclient.NewDirect(time.Second), 5*time.Second)}
	h.startController(opts)

	var total time.Duration
	n := 0
	for b.Loop() {
		o := &v1alpha1.ProxyRuntimeOverride{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet-" + strconv.Itoa(n), Namespace: h.ns},
			Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target:  target("fleet"),
				Rollout: v1alpha1.Rollout{MaxConcurrent: 50},
				// Each run sets its own key, so no two runs conflict.
				Runtime:  map[string]string{"bench.run" + strconv.Itoa(n): "on"},
				OnDelete: v1alpha1.OnDeleteKeep,
			},
		}
		n++
		start := time.Now()
		if err := h.c.Create(b.Context(), o); err != nil {
			b.Fatal(err)
		}
		for {
			if err := h.get(o); err != nil {
				b.Fatal(err)
			}
			if o.Status.Succeeded == benchPods && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("not applied to every pod after 2 minutes: %+v", o.Status.Counters)
			}
			time.Sleep(10 * time.Millisecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(n), "s/rollout")
}
