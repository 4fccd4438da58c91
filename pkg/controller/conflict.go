package controller

import (
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// The conflict rule. When two resources of one kind would set the same key
// on the same pod, the older one holds it: the one with the earlier
// creationTimestamp, and between two created in the same second, the one
// whose name sorts first. The other leaves that key alone on that pod and
// reports the Conflict condition, naming the key and the holder. The rule
// depends only on the two resources, never on which was reconciled first,
// so it gives the same answer every time and on every replica; and a new
// resource can never take a key from one already in place. When the holder
// goes, the next in line takes the key over.
//
// A take-over waits for the release. A resource that wrote a key on a pod
// keeps it, whatever its age or state, until its status entry for the pod
// no longer records it: the entry drops a key once it is set back (the
// resource deleted or expired, no longer selecting the pod or setting the
// key, or losing it to an older one, which it undoes like a key dropped
// from its spec; a health check that loses a pod just drops its state,
// the holder setting its own), and goes with the resource. Only then does the next one
// write the key. Taking the key over as soon as the holder was deleted
// raced with the holder's undo: the next one could read the holder's
// value and record it as the previous one (to set it back on its own
// delete), and the undo could land after the new value and wipe it out.
// Waiting, the next one reads the holder's own previous value, just set
// back: the value from before any of them. The holder's status writes do
// not trigger the other resources' reconciles, so one that waits checks
// again after RetryBase.
//
// For ProxyRuntimeOverride the keys are runtime:<key> for each runtime key,
// logging:<logger> for each component level, and logging:* for the level of
// every logger, which overlaps every logging key. For ProxyHealthCheck the
// one key is the pod's health-check state.

// holdsBefore reports whether a takes precedence over b.
func holdsBefore(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// Key prefixes of ProxyRuntimeOverride.
const (
	runtimeKeyPrefix = "runtime:"
	loggingKeyPrefix = "logging:"
	allLoggersKey    = "logging:*"
)

// overrideKeys lists the keys an override sets, sorted.
func overrideKeys(spec *v1alpha1.ProxyRuntimeOverrideSpec) []string {
	var keys []string
	for k := range spec.Runtime {
		keys = append(keys, runtimeKeyPrefix+k)
	}
	if l := spec.Logging; l != nil {
		if l.Level != "" {
			keys = append(keys, allLoggersKey)
		}
		for c := range l.Components {
			keys = append(keys, loggingKeyPrefix+c)
		}
	}
	sort.Strings(keys)
	return keys
}

// overlap reports whether two keys name the same setting.
func overlap(a, b string) bool {
	if a == b {
		return true
	}
	return (a == allLoggersKey && strings.HasPrefix(b, loggingKeyPrefix)) ||
		(b == allLoggersKey && strings.HasPrefix(a, loggingKeyPrefix))
}

// claimant is another resource that selects the same pod, with its keys.
type claimant struct {
	obj  metav1.Object
	keys []string
}

// divide splits an override's keys on one pod into those it holds and
// those an older claimant holds (key -> holder's name).
func divide(self metav1.Object, keys []string, others []claimant) (held []string, lost map[string]string) {
	var older []claimant
	for _, o := range others {
		if holdsBefore(o.obj, self) {
			older = append(older, o)
		}
	}
	return byHolder(keys, older)
}

// awaitRelease splits the keys a resource holds on a pod by the conflict
// rule into those free to write and those another resource still has on
// record there (key -> its name, the oldest one when several have it):
// those wait for it to undo them (see the conflict rule).
func awaitRelease(held []string, recorded []claimant) (free []string, busy map[string]string) {
	return byHolder(held, recorded)
}

// byHolder splits keys into those no claimant has and those one has (key
// -> the name of the oldest claimant with an overlapping key).
func byHolder(keys []string, claimants []claimant) (free []string, taken map[string]string) {
	for _, k := range keys {
		var holder metav1.Object
		for _, o := range claimants {
			if holder != nil && !holdsBefore(o.obj, holder) {
				continue
			}
			if slices.ContainsFunc(o.keys, func(ok string) bool { return overlap(k, ok) }) {
				holder = o.obj
			}
		}
		if holder == nil {
			free = append(free, k)
			continue
		}
		if taken == nil {
			taken = map[string]string{}
		}
		taken[k] = holder.GetName()
	}
	return free, taken
}
