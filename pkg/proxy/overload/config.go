package overload

import (
	"errors"
	"fmt"
	"strings"
	"time"

	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	cgroupmemoryv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/cgroup_memory/v3"
	cpuutilizationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/cpu_utilization/v3"
	connectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	injectedresourcev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/injected_resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// New builds the overload manager from the bootstrap's overload_manager.
// A nil cfg configures no monitor and no action: the global connection
// limit then comes from the runtime key alone. New starts nothing (Start
// does), so --mode validate builds it safely. Errors name the field below
// overload_manager ("actions[1].triggers[0].name: ..."), one per problem
// (joined).
func New(cfg *overloadv3.OverloadManager, deps Deps) (*Manager, error) {
	if deps.Stats == nil {
		return nil, errors.New("overload: no stat store")
	}
	deps = deps.withDefaults()
	m := &Manager{
		log:            deps.Log,
		clock:          deps.Clock,
		rand:           deps.Rand,
		freeOSMemory:   deps.FreeOSMemory,
		runtime:        deps.Runtime,
		interval:       DefaultRefreshInterval,
		shrinkInterval: DefaultShrinkHeapInterval,
		stopCh:         make(chan struct{}),
	}
	m.accept.Store(&acceptState{changed: make(chan struct{})})
	m.conns.runtime = deps.Runtime
	m.conns.log = deps.Log
	if cfg == nil {
		return m, nil
	}
	c := compiler{
		m:        m,
		scope:    deps.Stats.Scope(""),
		heap:     deps.HeapInUse,
		files:    hostFiles{root: deps.HostRoot},
		now:      deps.Clock.Now,
		monitors: map[string]*resource{},
		broken:   map[string]bool{},
	}
	c.refreshInterval(cfg)
	c.resourceMonitors(cfg.GetResourceMonitors())
	c.actions(cfg.GetActions())
	// Never accepted and ignored: the support check refuses these first.
	if len(cfg.GetLoadshedPoints()) > 0 {
		c.fail("loadshed_points", "not supported by Outrigger")
	}
	if cfg.GetBufferFactoryConfig() != nil {
		c.fail("buffer_factory_config", "not supported by Outrigger")
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	m.refreshDelay = c.scope.Histogram("overload.refresh_interval_delay", stats.UnitMilliseconds)
	return m, nil
}

// compiler turns the configuration into the manager's parts, collecting
// every problem with its path.
type compiler struct {
	m     *Manager
	scope stats.Scope
	heap  func() uint64
	// files and now serve the cgroup and CPU monitors.
	files hostFiles
	now   func() time.Time
	// monitors are the built monitors by canonical name; broken names the
	// monitors whose configuration failed, so that triggers naming them
	// are not reported a second time.
	monitors map[string]*resource
	broken   map[string]bool
	errs     []error
}

// fail records one problem at path.
func (c *compiler) fail(path, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// refreshInterval reads refresh_interval (Envoy's default 1 s, whole
// milliseconds). Zero would spin the refresh loop: it is refused.
func (c *compiler) refreshInterval(cfg *overloadv3.OverloadManager) {
	ri := cfg.GetRefreshInterval()
	if ri == nil {
		return
	}
	if err := ri.CheckValid(); err != nil {
		c.fail("refresh_interval", "%v", err)
		return
	}
	d := ri.AsDuration().Truncate(time.Millisecond)
	if d < time.Millisecond {
		c.fail("refresh_interval", "must be at least 1ms (got %s)", ri.AsDuration())
		return
	}
	c.m.interval = d
}

// resourceMonitors builds the monitors: fixed_heap, cgroup_memory and
// cpu_utilization (polled) and the downstream connections monitor
// (proactive), selected by the type of their typed_config.
func (c *compiler) resourceMonitors(rms []*overloadv3.ResourceMonitor) {
	seen := map[string]string{}
	for i, rm := range rms {
		path := fmt.Sprintf("resource_monitors[%d]", i)
		name := rm.GetName()
		if name == "" {
			c.fail(path+".name", "must be set")
			continue
		}
		key := canonical(name)
		if first, dup := seen[key]; dup {
			c.fail(path+".name", "duplicate resource monitor %s (%s has the same name)", name, first)
			continue
		}
		seen[key] = path
		if r := c.resourceMonitor(rm, path); r != nil {
			c.monitors[key] = r
		} else {
			c.broken[key] = true
		}
	}
}

// resourceMonitor builds one monitor, or reports why it cannot.
func (c *compiler) resourceMonitor(rm *overloadv3.ResourceMonitor, path string) *resource {
	name := rm.GetName()
	connName := canonical(name) == canonical(MonitorGlobalConnections)
	tc := rm.GetTypedConfig()
	if tc == nil {
		c.fail(path+".typed_config", "required: the monitor's configuration (%s or %s)",
			proto.MessageName(&fixedheapv3.FixedHeapConfig{}), proto.MessageName(&connectionsv3.DownstreamConnectionsConfig{}))
		return nil
	}
	msg, err := tc.UnmarshalNew()
	if err != nil {
		c.fail(path+".typed_config", "resource monitor %s is not supported by Outrigger", typeName(tc))
		return nil
	}
	if _, isConn := msg.(*connectionsv3.DownstreamConnectionsConfig); connName && !isConn {
		c.fail(path+".typed_config", "the resource monitor named %s takes a %s", name, proto.MessageName(&connectionsv3.DownstreamConnectionsConfig{}))
		return nil
	}
	switch mc := msg.(type) {
	case *fixedheapv3.FixedHeapConfig:
		h, ok := c.fixedHeap(mc, path+".typed_config")
		if !ok {
			return nil
		}
		return c.polled(name, h)
	case *injectedresourcev3.InjectedResourceConfig:
		m, err := newInjectedResource(mc.GetFilename(), c.m.log)
		if err != nil {
			c.fail(path+".typed_config.filename", "%v", err)
			return nil
		}
		return c.polled(name, m)
	case *cgroupmemoryv3.CgroupMemoryConfig:
		m, err := newCgroupMemory(c.files, mc.GetMaxMemoryBytes())
		if err != nil {
			c.fail(path+".typed_config", "%v", err)
			return nil
		}
		return c.polled(name, m)
	case *cpuutilizationv3.CpuUtilizationConfig:
		r, err := c.cpuReader(mc.GetMode())
		if err != nil {
			c.fail(path+".typed_config.mode", "%v", err)
			return nil
		}
		return c.polled(name, newCPUUtilization(r))
	case *connectionsv3.DownstreamConnectionsConfig:
		if !connName {
			c.fail(path+".name", "the downstream connections monitor must be named %s (or proxy.%s)",
				MonitorGlobalConnections, canonical(MonitorGlobalConnections))
			return nil
		}
		if mc.GetMaxActiveDownstreamConnections() <= 0 {
			c.fail(path+".typed_config.max_active_downstream_connections", "must be greater than 0")
			return nil
		}
		r := newResource(c.scope, name, nil)
		c.m.conns.res = r
		c.m.conns.max = mc.GetMaxActiveDownstreamConnections()
		return r
	default:
		c.fail(path+".typed_config", "resource monitor %s is not supported by Outrigger", typeName(tc))
		return nil
	}
}

// fixedHeap builds the fixed_heap monitor: exactly one of
// max_heap_size_bytes and max_heap_size_bytes_runtime, whose runtime key
// is read at each update (so /runtime_modify and RTDS move the maximum)
// and must give more than 0 when the monitor is built, as in Envoy.
func (c *compiler) fixedHeap(mc *fixedheapv3.FixedHeapConfig, path string) (fixedHeap, bool) {
	rt := mc.GetMaxHeapSizeBytesRuntime()
	if (mc.GetMaxHeapSizeBytes() != 0) == (rt != nil) {
		c.fail(path, "fixed_heap: exactly one of max_heap_size_bytes or max_heap_size_bytes_runtime must be set")
		return fixedHeap{}, false
	}
	if rt == nil {
		limit := mc.GetMaxHeapSizeBytes()
		return fixedHeap{max: func() uint64 { return limit }, read: c.heap}, true
	}
	key, def, layers := rt.GetRuntimeKey(), rt.GetDefaultValue(), c.m.runtime
	limit := func() uint64 {
		if layers == nil {
			return def
		}
		return layers.Snapshot().Uint64(key, def)
	}
	if limit() == 0 {
		c.fail(path+".max_heap_size_bytes_runtime", "fixed_heap: max heap size must be greater than 0")
		return fixedHeap{}, false
	}
	return fixedHeap{max: limit, read: c.heap}, true
}

// polled adds a polled monitor.
func (c *compiler) polled(name string, m Monitor) *resource {
	r := newResource(c.scope, name, m)
	c.m.resources = append(c.m.resources, r)
	return r
}

// cpuReader picks the CPU utilization monitor's reader: /proc/stat for
// HOST; for CONTAINER, cgroup v2 when its cpu.stat, cpu.max and
// cpuset.cpus.effective exist, else cgroup v1 when its cpu.shares and
// cpuacct.usage exist, else an error (as Envoy's).
func (c *compiler) cpuReader(mode cpuutilizationv3.CpuUtilizationConfig_UtilizationComputeStrategy) (cpuReader, error) {
	switch mode {
	case cpuutilizationv3.CpuUtilizationConfig_HOST:
		return hostCPU{files: c.files}, nil
	case cpuutilizationv3.CpuUtilizationConfig_CONTAINER:
		f := c.files
		switch {
		case f.exists(cgroupV2CPUStat) && f.exists(cgroupV2CPUMax) && f.exists(cgroupV2CPUEffCPUs):
			return cgroupV2CPU{files: f, clock: newCgroupClock(c.now)}, nil
		case f.exists(cgroupV1CPUShares) && f.exists(cgroupV1CPUAcctUsed):
			return cgroupV1CPU{files: f, clock: newCgroupClock(c.now)}, nil
		default:
			return nil, fmt.Errorf("no supported cgroup CPU implementation found (neither %s nor %s)", cgroupV2CPUStat, cgroupV1CPUShares)
		}
	default:
		return nil, fmt.Errorf("unknown mode %v", mode)
	}
}

// actions builds the actions and their triggers.
func (c *compiler) actions(acs []*overloadv3.OverloadAction) {
	var seen [numActions]string
	for i, ac := range acs {
		path := fmt.Sprintf("actions[%d]", i)
		name := ac.GetName()
		kind, ok := lookupAction(name)
		switch {
		case ok:
		case isUnimplementedAction(name):
			c.fail(path+".name", "overload action %s is not supported by Outrigger", name)
			continue
		default:
			c.fail(path+".name", "Unknown Overload Manager Action %s (supported: %s)", name, strings.Join(actionNames[:], ", "))
			continue
		}
		if first := seen[kind]; first != "" {
			c.fail(path+".name", "duplicate overload action %s (%s is the same action)", name, first)
			continue
		}
		seen[kind] = path
		a := newAction(c.scope, kind, name)
		c.actionConfig(a, ac.GetTypedConfig(), path+".typed_config")
		c.triggers(a, ac.GetTriggers(), path)
		c.m.byKind[kind] = a
	}
}

// triggers builds the triggers of action a.
func (c *compiler) triggers(a *action, trs []*overloadv3.Trigger, path string) {
	if len(trs) == 0 {
		c.fail(path+".triggers", "at least one trigger is required")
		return
	}
	seen := map[string]string{}
	for j, tr := range trs {
		tp := fmt.Sprintf("%s.triggers[%d]", path, j)
		key := canonical(tr.GetName())
		r, ok := c.monitors[key]
		if !ok {
			if !c.broken[key] {
				c.fail(tp+".name", "Unknown trigger resource %s for overload action %s", tr.GetName(), a.name)
			}
			continue
		}
		if first, dup := seen[key]; dup {
			c.fail(tp+".name", "Duplicate trigger resource %s for overload action %s (%s names it already)", tr.GetName(), a.name, first)
			continue
		}
		seen[key] = tp
		t, ok := c.trigger(tr, tp)
		if !ok {
			continue
		}
		a.triggers = append(a.triggers, t)
		r.actions = append(r.actions, actionRef{action: a, trigger: len(a.triggers) - 1})
	}
}

// trigger builds one trigger: threshold or scaled, with Envoy's rules.
func (c *compiler) trigger(tr *overloadv3.Trigger, path string) (trigger, bool) {
	inRange := func(v float64) bool { return v >= 0 && v <= 1 }
	switch t := tr.GetTriggerOneof().(type) {
	case *overloadv3.Trigger_Threshold:
		v := t.Threshold.GetValue()
		if !inRange(v) {
			c.fail(path+".threshold.value", "must be inside range [0, 1]")
			return nil, false
		}
		return &thresholdTrigger{threshold: v}, true
	case *overloadv3.Trigger_Scaled:
		lo, hi := t.Scaled.GetScalingThreshold(), t.Scaled.GetSaturationThreshold()
		ok := true
		if !inRange(lo) {
			c.fail(path+".scaled.scaling_threshold", "must be inside range [0, 1]")
			ok = false
		}
		if !inRange(hi) {
			c.fail(path+".scaled.saturation_threshold", "must be inside range [0, 1]")
			ok = false
		}
		if ok && lo >= hi {
			c.fail(path+".scaled", "scaling_threshold must be less than saturation_threshold")
			ok = false
		}
		if !ok {
			return nil, false
		}
		return &scaledTrigger{scaling: lo, saturation: hi}, true
	default:
		c.fail(path, "one of threshold or scaled is required")
		return nil, false
	}
}

// actionConfig reads an action's typed_config: reduce_timeouts requires a
// ScaleTimersOverloadActionConfig, shrink_heap takes an optional
// ShrinkHeapConfig, and the other actions take none (Envoy refuses one).
func (c *compiler) actionConfig(a *action, tc *anypb.Any, path string) {
	switch a.kind {
	case reduceTimeouts:
		var cfg overloadv3.ScaleTimersOverloadActionConfig
		if tc == nil {
			c.fail(path, "required: a %s", proto.MessageName(&cfg))
			return
		}
		if !c.unpack(tc, &cfg, path) {
			return
		}
		c.scaleTimers(&cfg, path)
	case shrinkHeap:
		c.m.shrinkCount = c.scope.Counter("overload." + a.name + ".shrink_count")
		if tc == nil {
			return
		}
		var cfg overloadv3.ShrinkHeapConfig
		if !c.unpack(tc, &cfg, path) {
			return
		}
		if ti := cfg.GetTimerInterval(); ti != nil {
			if err := ti.CheckValid(); err != nil {
				c.fail(path+".timer_interval", "%v", err)
			} else if d := ti.AsDuration(); d < time.Second {
				c.fail(path+".timer_interval", "must be at least 1s (got %s)", d)
			} else {
				c.m.shrinkInterval = d.Truncate(time.Millisecond)
			}
		}
		if cfg.GetMaxUnfreedMemoryBytes() != nil {
			c.fail(path+".max_unfreed_memory_bytes", "not supported by Outrigger (the Go runtime returns all the free memory it can at once)")
		}
	default:
		if tc != nil {
			c.fail(path, "Overload action %q has an unexpected value for the typed_config field", a.name)
		}
	}
}

// unpack decodes tc into m, which must be its type.
func (c *compiler) unpack(tc *anypb.Any, m proto.Message, path string) bool {
	if !tc.MessageIs(m) {
		c.fail(path, "must be a %s, not %s", proto.MessageName(m), typeName(tc))
		return false
	}
	if err := tc.UnmarshalTo(m); err != nil {
		c.fail(path, "%v", err)
		return false
	}
	return true
}

// scaleTimers reads the timer minimums of reduce_timeouts.
func (c *compiler) scaleTimers(cfg *overloadv3.ScaleTimersOverloadActionConfig, path string) {
	if len(cfg.GetTimerScaleFactors()) == 0 {
		c.fail(path+".timer_scale_factors", "at least one timer is required")
		return
	}
	for k, st := range cfg.GetTimerScaleFactors() {
		sp := fmt.Sprintf("%s.timer_scale_factors[%d]", path, k)
		var kind timerKind
		switch st.GetTimer() {
		case overloadv3.ScaleTimersOverloadActionConfig_HTTP_DOWNSTREAM_CONNECTION_IDLE:
			kind = timerConnectionIdle
		case overloadv3.ScaleTimersOverloadActionConfig_HTTP_DOWNSTREAM_STREAM_IDLE:
			kind = timerStreamIdle
		default:
			c.fail(sp+".timer", "%s is not supported by Outrigger (supported: HTTP_DOWNSTREAM_CONNECTION_IDLE, HTTP_DOWNSTREAM_STREAM_IDLE)", st.GetTimer())
			continue
		}
		if c.m.timers[kind].set {
			c.fail(sp+".timer", "Found duplicate entry for timer type %s", st.GetTimer())
			continue
		}
		switch adj := st.GetOverloadAdjust().(type) {
		case *overloadv3.ScaleTimersOverloadActionConfig_ScaleTimer_MinTimeout:
			d := adj.MinTimeout
			if err := d.CheckValid(); err != nil {
				c.fail(sp+".min_timeout", "%v", err)
				continue
			}
			if d.AsDuration() < 0 {
				c.fail(sp+".min_timeout", "must not be negative")
				continue
			}
			c.m.timers[kind] = timerMinimum{set: true, absolute: true, min: d.AsDuration().Truncate(time.Millisecond)}
		case *overloadv3.ScaleTimersOverloadActionConfig_ScaleTimer_MinScale:
			v := adj.MinScale.GetValue()
			if !(v >= 0 && v <= 100) {
				c.fail(sp+".min_scale.value", "must be inside range [0, 100]")
				continue
			}
			c.m.timers[kind] = timerMinimum{set: true, scale: v / 100}
		default:
			c.fail(sp, "one of min_timeout or min_scale is required")
		}
	}
}

// typeName is the message name of an Any's type URL.
func typeName(a *anypb.Any) string {
	u := a.GetTypeUrl()
	return u[strings.LastIndexByte(u, '/')+1:]
}
