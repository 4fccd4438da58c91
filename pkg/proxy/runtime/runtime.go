// Package runtime is the proxy's layered runtime: key/value settings that can
// change without a restart. Layers come from the bootstrap's layered_runtime
// (static, disk, RTDS and admin layers); later layers override earlier ones. Readers
// take an immutable Snapshot, so a lookup on the request path is one atomic
// load and one map read, with no lock.
package runtime

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// ErrNoAdminLayer is returned by Modify when no admin layer is configured.
var ErrNoAdminLayer = errors.New("no admin layer specified")

// LayerKind tells where a layer's values come from.
type LayerKind int

// The layer kinds Outrigger implements.
const (
	StaticLayer LayerKind = iota
	DiskLayer
	AdminLayer
	// RTDSLayer is empty until its Runtime resource arrives from a
	// management server (SetRTDSLayer).
	RTDSLayer
)

// layer is one named source of values. Static and disk layers are fixed after
// load; the admin layer is replaced as a whole on every Modify, an RTDS
// layer on every update of its resource.
type layer struct {
	name   string
	kind   LayerKind
	values map[string]string
}

// Options carries what the runtime needs from outside the bootstrap.
type Options struct {
	// ServiceCluster is appended to a disk layer's path when the layer asks
	// for it (append_service_cluster).
	ServiceCluster string
}

// Runtime holds the layers and publishes snapshots of their merged values.
type Runtime struct {
	mu       sync.Mutex // serialises Modify; readers never take it
	layers   []layer    // guarded by mu for the admin layer's values
	adminIdx int        // index of the admin layer, -1 when there is none
	snap     atomic.Pointer[Snapshot]
}

// New builds the runtime from the bootstrap's layered_runtime. A nil config
// gives a runtime with no layers (and so no admin layer), as Envoy does when
// layered_runtime is absent; a config with no layers gets one unnamed admin
// layer, as Envoy synthesises.
func New(cfg *bootstrapv3.LayeredRuntime, opts Options) (*Runtime, error) {
	r := &Runtime{adminIdx: -1}
	if cfg != nil {
		if len(cfg.GetLayers()) == 0 {
			r.layers = append(r.layers, layer{kind: AdminLayer, values: map[string]string{}})
			r.adminIdx = 0
		}
		seen := map[string]bool{}
		for i, l := range cfg.GetLayers() {
			path := fmt.Sprintf("layered_runtime.layers[%d]", i)
			if seen[l.GetName()] {
				return nil, fmt.Errorf("%s.name: duplicate layer name %q", path, l.GetName())
			}
			seen[l.GetName()] = true
			built, err := buildLayer(l, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if built.kind == AdminLayer {
				if r.adminIdx >= 0 {
					return nil, fmt.Errorf("%s: too many admin layers specified, at most one may be specified", path)
				}
				r.adminIdx = len(r.layers)
			}
			r.layers = append(r.layers, built)
		}
	}
	r.publish()
	return r, nil
}

func buildLayer(l *bootstrapv3.RuntimeLayer, opts Options) (layer, error) {
	switch spec := l.GetLayerSpecifier().(type) {
	case *bootstrapv3.RuntimeLayer_StaticLayer:
		values, err := flattenStruct(spec.StaticLayer)
		if err != nil {
			return layer{}, fmt.Errorf("static_layer: %w", err)
		}
		return layer{name: l.GetName(), kind: StaticLayer, values: values}, nil
	case *bootstrapv3.RuntimeLayer_DiskLayer_:
		values, err := loadDiskLayer(spec.DiskLayer, opts.ServiceCluster)
		if err != nil {
			return layer{}, fmt.Errorf("disk_layer: %w", err)
		}
		return layer{name: l.GetName(), kind: DiskLayer, values: values}, nil
	case *bootstrapv3.RuntimeLayer_AdminLayer_:
		return layer{name: l.GetName(), kind: AdminLayer, values: map[string]string{}}, nil
	case *bootstrapv3.RuntimeLayer_RtdsLayer_:
		if spec.RtdsLayer.GetRtdsConfig() == nil {
			return layer{}, errors.New("rtds_layer.rtds_config: required")
		}
		return layer{name: l.GetName(), kind: RTDSLayer, values: map[string]string{}}, nil
	case nil:
		return layer{}, errors.New("a layer needs one of static_layer, disk_layer, rtds_layer or admin_layer")
	default:
		return layer{}, fmt.Errorf("layer kind %T is not supported by Outrigger", spec)
	}
}

// publish merges the layers into a new snapshot. Callers hold mu or own r.
func (r *Runtime) publish() {
	merged := map[string]string{}
	for _, l := range r.layers {
		maps.Copy(merged, l.values)
	}
	r.snap.Store(newSnapshot(merged))
}

// Snapshot returns the current merged values. It never blocks.
func (r *Runtime) Snapshot() *Snapshot { return r.snap.Load() }

// HasAdminLayer reports whether /runtime_modify can change anything.
func (r *Runtime) HasAdminLayer() bool { return r.adminIdx >= 0 }

// Modify merges pairs into the admin layer; an empty value deletes a key the
// admin layer holds (values of other layers cannot be deleted, only
// overridden). All pairs apply at once in one new snapshot.
func (r *Runtime) Modify(pairs map[string]string) error {
	if r.adminIdx < 0 {
		return ErrNoAdminLayer
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	admin := maps.Clone(r.layers[r.adminIdx].values)
	for k, v := range pairs {
		if k == "" {
			return errors.New("empty runtime key")
		}
		// /runtime renders values as JSON strings, which cannot carry
		// arbitrary bytes: refuse what would come back altered.
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("runtime key %q: keys and values must be valid UTF-8", k)
		}
		if v == "" {
			delete(admin, k)
			continue
		}
		admin[k] = v
	}
	r.layers[r.adminIdx].values = admin
	r.publish()
	return nil
}

// SetRTDSLayer replaces the values of the RTDS layer at index (its place
// in layered_runtime.layers) with a Runtime resource's layer, and
// publishes them at once; a nil layer empties it (the resource was
// removed). A layer that is not a valid runtime tree is refused and the
// values in force stay.
func (r *Runtime) SetRTDSLayer(index int, values *structpb.Struct) error {
	flat, err := flattenStruct(values)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if index < 0 || index >= len(r.layers) || r.layers[index].kind != RTDSLayer {
		return fmt.Errorf("layered_runtime.layers[%d] is not an RTDS layer", index)
	}
	r.layers[index].values = flat
	r.publish()
	return nil
}

// AdminOverrides returns how many keys the admin layer holds (the
// runtime.admin_overrides_active gauge).
func (r *Runtime) AdminOverrides() int {
	if r.adminIdx < 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.layers[r.adminIdx].values)
}

// LayerNames returns the layer names in override order.
func (r *Runtime) LayerNames() []string {
	names := make([]string, len(r.layers))
	for i, l := range r.layers {
		names[i] = l.name
	}
	return names
}

// Entry is one key with its value in every layer.
type Entry struct {
	Key         string
	LayerValues []string // "" where a layer lacks the key
	FinalValue  string
}

// Entries returns every key known to any layer, sorted by key.
func (r *Runtime) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := map[string]bool{}
	for _, l := range r.layers {
		for k := range l.values {
			keys[k] = true
		}
	}
	sorted := slices.Sorted(maps.Keys(keys))
	entries := make([]Entry, 0, len(sorted))
	for _, k := range sorted {
		e := Entry{Key: k, LayerValues: make([]string, len(r.layers))}
		for i, l := range r.layers {
			if v, ok := l.values[k]; ok {
				e.LayerValues[i] = v
				e.FinalValue = v
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// Snapshot is an immutable view of the merged runtime values.
type Snapshot struct {
	values map[string]string
	// fractions are the values that read as a FractionalPercent, parsed
	// once here rather than on the request path.
	fractions map[string]fraction
}

// newSnapshot wraps merged values, reading the fractional ones.
func newSnapshot(values map[string]string) *Snapshot {
	s := &Snapshot{values: values}
	for k, v := range values {
		if f, ok := parseFraction(v); ok {
			if s.fractions == nil {
				s.fractions = map[string]fraction{}
			}
			s.fractions[k] = f
		}
	}
	return s
}

// Fraction returns a key's value when it is a FractionalPercent, as
// numerator and denominator (100, 10,000 or 1,000,000).
func (s *Snapshot) Fraction(key string) (num, den uint64, ok bool) {
	f, ok := s.fractions[key]
	return f.num, f.den, ok
}

// Get returns a key's final value.
func (s *Snapshot) Get(key string) (string, bool) {
	v, ok := s.values[key]
	return v, ok
}

// Len returns the number of keys (the runtime.num_keys gauge).
func (s *Snapshot) Len() int { return len(s.values) }

// Uint64 returns a key as a non-negative integer, as Envoy's getInteger
// reads one: a decimal integer, or a non-negative number whose fraction is
// dropped; any other value, or no value, gives def.
func (s *Snapshot) Uint64(key string, def uint64) uint64 {
	v, ok := s.values[key]
	if !ok {
		return def
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < math.MaxUint64 {
		return uint64(f)
	}
	return def
}

// Bool returns a key as a boolean feature flag: "true" and "false" (as Envoy
// parses them) override def; any other value, or no value, gives def.
func (s *Snapshot) Bool(key string, def bool) bool {
	switch s.values[key] {
	case "true":
		return true
	case "false":
		return false
	default:
		return def
	}
}

// Latest returns a Reader of r's latest snapshot at each read, for
// values read per connection or request by code that holds no snapshot.
func (r *Runtime) Latest() FractionReader { return latest{r} }

// latest reads a Runtime's current snapshot.
type latest struct{ r *Runtime }

func (l latest) Uint64(key string, def uint64) uint64 { return l.r.Snapshot().Uint64(key, def) }

func (l latest) Fraction(key string) (num, den uint64, ok bool) { return l.r.Snapshot().Fraction(key) }
