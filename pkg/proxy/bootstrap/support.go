package bootstrap

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// supportChecker walks a configuration and reports everything Outrigger
// does not implement: fields missing from the support tables, enum values
// outside their allowed list, and typed_config values whose extension is
// unknown, disabled or of the wrong category. It also validates the
// protoc-gen-validate constraints of typed_config contents, which
// Bootstrap.ValidateAll does not reach into.
type supportChecker struct {
	ext *extension.Registry
	// pgv collects constraint violations inside typed_config values.
	pgv []error
	// unsupported collects support-check failures.
	unsupported []error
	// names holds the name written beside each typed_config, by the
	// typed_config's path: a refusal quotes what the table says of it when
	// the config type does not tell the extension's name.
	names map[string]string
	// populated is message's stack of the populated fields it visits.
	populated []populatedField
}

// message checks the populated fields of m, found at path. Fields are
// visited in declaration order so that reports are stable.
func (c *supportChecker) message(m protoreflect.Message, path string) {
	fields := m.Descriptor().Fields()
	if fd := fields.ByName("name"); fd != nil && fd.Kind() == protoreflect.StringKind && fd.Cardinality() != protoreflect.Repeated && fields.ByName("typed_config") != nil {
		if c.names == nil {
			c.names = map[string]string{}
		}
		c.names[childPath(path, "typed_config")] = m.Get(fd).String()
	}
	// One pass over the populated fields, then declaration order: asking
	// each of a message's fields whether it is set cost twice as much
	// (a Cluster has some fifty, a control plane's sets five).
	// The fields go on c.populated, a stack shared by the recursion: this
	// message's are [start:] until it returns.
	if c.populated == nil {
		c.populated = make([]populatedField, 0, 32)
	}
	start := len(c.populated)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsExtension() {
			c.unsupported = append(c.unsupported, fieldErrorf(childPath(path, "["+string(fd.FullName())+"]"), "not supported by Outrigger"))
			return true
		}
		c.populated = append(c.populated, populatedField{fd, v})
		return true
	})
	set := c.populated[start:]
	slices.SortFunc(set, func(a, b populatedField) int { return a.fd.Index() - b.fd.Index() })
	for _, f := range set {
		c.field(f.fd, f.v, childPath(path, string(f.fd.Name())))
	}
	clear(c.populated[start:])
	c.populated = c.populated[:start]
}

// populatedField is a set field of a message and its value.
type populatedField struct {
	fd protoreflect.FieldDescriptor
	v  protoreflect.Value
}

// field checks one populated field and, if supported, its contents.
func (c *supportChecker) field(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) {
	rule, ok := lookupSupport(fd.FullName())
	if !ok {
		c.unsupported = append(c.unsupported, &FieldError{Path: path, Reason: unsupportedReason(fd.FullName())})
		return
	}
	if rule.only != nil && !fd.IsMap() && !rule.only.MatchString(path) {
		c.unsupported = append(c.unsupported, fieldErrorf(path, "not supported by Outrigger here (only in %s)", rule.onlyWhere))
		return
	}
	switch {
	case fd.IsList() && rule.firstOfCategory != "":
		c.firstOfCategory(v.List(), path, rule.firstOfCategory)
	case fd.IsList():
		list := v.List()
		for i := range list.Len() {
			c.value(fd, rule, list.Get(i), indexPath(path, i))
		}
	case fd.IsMap():
		mp := v.Map()
		for _, k := range sortedMapKeys(mp) {
			p := mapKeyPath(path, k)
			if rule.only != nil && !rule.only.MatchString(p) {
				// A map's only names the entries (their keys) too.
				c.unsupported = append(c.unsupported, fieldErrorf(p, "not supported by Outrigger here (only in %s)", rule.onlyWhere))
				continue
			}
			c.value(fd.MapValue(), rule, mp.Get(k), p)
		}
	default:
		c.value(fd, rule, v, path)
	}
}

// firstOfCategory checks the first load-balancing policy of list whose
// typed_extension_config's typed_config is an enabled extension of
// category, as Envoy takes the first policy it has a factory for; the
// policies before it are skipped and the ones after it never read.
func (c *supportChecker) firstOfCategory(list protoreflect.List, path, category string) {
	for i := range list.Len() {
		m := list.Get(i).Message()
		pol, ok := m.Interface().(*clusterv3.LoadBalancingPolicy_Policy)
		if !ok {
			continue
		}
		ext, ok := c.ext.Lookup(pol.GetTypedExtensionConfig().GetTypedConfig().GetTypeUrl())
		if ok && !ext.Disabled && ext.Category == category {
			c.message(m, indexPath(path, i))
			return
		}
	}
}

// listenerAddressPath matches the path of a listener's own address field
// (static, or relative to a discovered listener), main or additional.
var listenerAddressPath = regexp.MustCompile(`^(static_resources\.listeners\[\d+\]\.)?(address|additional_addresses\[\d+\]\.address)\.socket_address\.protocol$`)

// value checks one value of a supported field.
func (c *supportChecker) value(fd protoreflect.FieldDescriptor, rule fieldSupport, v protoreflect.Value, path string) {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if len(rule.values) == 0 {
			return
		}
		name := enumName(fd, v.Enum())
		if slices.Contains(rule.sinkValues, name) && strings.HasPrefix(path, "stats_sinks[") {
			return
		}
		if slices.Contains(rule.listenerValues, name) && listenerAddressPath.MatchString(path) {
			return
		}
		if !slices.Contains(rule.values, name) {
			c.unsupported = append(c.unsupported, fieldErrorf(path, "%s is not supported by Outrigger (supported: %s)", name, strings.Join(rule.values, ", ")))
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch name := fd.Message().FullName(); {
		case rule.plugin:
			c.clusterSpecifierPlugin(v.Message(), path)
		case name == httpFilterName:
			c.httpFilter(v.Message(), path)
		case name == anyFullName && rule.data:
			// A value, not configuration: any type, as with a Struct.
		case name == anyFullName && rule.perFilter:
			c.perFilterConfig(v.Message(), path)
		case name == anyFullName && len(rule.types) > 0:
			c.typedMessage(v.Message(), path, rule.types)
		case name == anyFullName:
			if rule.byName && isEmptyAny(v.Message()) {
				// typed_config: {} beside a name: the extension is
				// found by its name, as with no typed_config.
				return
			}
			c.typedConfig(v.Message(), path, append([]string{rule.category}, rule.categories...))
		case isWellKnown(name):
			// A plain value (Struct, Duration...): nothing to support inside.
		case strings.HasPrefix(string(name), "google.api.expr."), strings.HasPrefix(string(name), "cel.expr."):
			// A CEL expression's AST (Expr, CheckedExpr, in v1alpha1 or
			// cel.dev/expr): package cel compiles it whole, and refuses
			// what it cannot.
		default:
			c.message(v.Message(), path)
		}
	}
}

// typedConfig checks a typed_config: its type must be a registered,
// enabled extension of the expected category; then its contents are
// validated and checked like any other message.
func (c *supportChecker) typedConfig(m protoreflect.Message, path string, categories []string) {
	a, ok := c.typedAny(m, path)
	if !ok {
		return
	}
	categories = slotCategories(path, categories)
	ext, ok := c.ext.Lookup(a.GetTypeUrl())
	switch {
	case !ok:
		c.unsupported = append(c.unsupported, fieldErrorf(path, "extension %q is not supported by Outrigger%s", extension.TypeName(a.GetTypeUrl()), c.ext.Refusal(a.GetTypeUrl(), c.names[path])))
		return
	case ext.Disabled:
		c.unsupported = append(c.unsupported, fieldErrorf(path, "extension %q is disabled by --disable-extensions", ext.Name))
		return
	case categories[0] != "" && !slices.Contains(categories, ext.Category):
		c.unsupported = append(c.unsupported, fieldErrorf(path, "extension %q (category %s) cannot be used here: expected category %s", ext.Name, ext.Category, strings.Join(categories, " or ")))
		return
	}
	c.anyContents(a, path)
}

// isEmptyAny reports whether m is an Any with neither a type nor a value.
func isEmptyAny(m protoreflect.Message) bool {
	a, ok := m.Interface().(*anypb.Any)
	return ok && a.GetTypeUrl() == "" && len(a.GetValue()) == 0
}

// typedAny returns the Any of a typed_config, reporting one without a type
// (false: nothing more to check).
func (c *supportChecker) typedAny(m protoreflect.Message, path string) (*anypb.Any, bool) {
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return nil, false
	}
	if a.GetTypeUrl() == "" {
		c.unsupported = append(c.unsupported, &FieldError{Path: path, Reason: "missing type (\"@type\")"})
		return nil, false
	}
	return a, true
}

// typedMessage checks a typed_config that is not an extension but one of
// a few message types (an overload action's configuration): its type must
// be one of types; then its contents are validated and checked like any
// other message.
func (c *supportChecker) typedMessage(m protoreflect.Message, path string, types []protoreflect.FullName) {
	a, ok := c.typedAny(m, path)
	if !ok {
		return
	}
	name := protoreflect.FullName(extension.TypeName(a.GetTypeUrl()))
	if !slices.Contains(types, name) {
		want := make([]string, len(types))
		for i, t := range types {
			want[i] = string(t)
		}
		c.unsupported = append(c.unsupported, fieldErrorf(path, "type %q is not supported here (supported: %s)", name, strings.Join(want, ", ")))
		return
	}
	c.anyContents(a, path)
}

// anyContents decodes an accepted typed_config, validates its
// protoc-gen-validate constraints and checks its fields.
func (c *supportChecker) anyContents(a *anypb.Any, path string) {
	inner, err := a.UnmarshalNew()
	if err != nil {
		c.unsupported = append(c.unsupported, fieldErrorf(path, "decode %s: %v", extension.TypeName(a.GetTypeUrl()), err))
		return
	}
	if v, ok := inner.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			c.pgv = append(c.pgv, pgvFieldErrors(err, inner.ProtoReflect().Descriptor(), path)...)
		}
	}
	c.message(inner.ProtoReflect(), path)
}

// enumName is the name of enum value n of fd, or its number if it has none.
func enumName(fd protoreflect.FieldDescriptor, n protoreflect.EnumNumber) string {
	if ev := fd.Enum().Values().ByNumber(n); ev != nil {
		return string(ev.Name())
	}
	return fmt.Sprint(int32(n))
}

// supportTables are the per-area support tables; each field appears in one.
// Keeping one table per area lets each feature extend its own.
var supportTables = []map[protoreflect.FullName]fieldSupport{
	supportedCore, supportedListener, supportedHCM, supportedRoute, supportedCluster, supportedStats, supportedDynamic,
	supportedOverload, supportedDNS, supportedAccessLog, supportedHTTPFilters, supportedExtAuthz, supportedTCPProxy, supportedTLS,
	supportedUpgrades, supportedCompression, supportedStatefulSession, supportedTracing, supportedNetLimits, supportedTap, supportedTransportTap, supportedUpstreamProxyProtocol, supportedInternalUpstream,
	supportedRBAC, supportedFiltersTail, supportedExtProc,
	supportedLocality, supportedDFP,
	supportedOnDemand, supportedUpstreamLog,
	supportedUDPProxy,
	supportedHTTP11Proxy,
	supportedJWTAuthn,
	supportedLua,
	supportedStringMatcherLua,
	supportedRateLimit,
	supportedAggregate,
	supportedGrpcJSONTranscoder,
	supportedOAuth2,
	supportedCache,
	supportedComposite,
	supportedOriginalSrc,
	supportedClusterSpecifiers,
	supportedInternalRedirects,
	supportedSocketMatches,
	supportedHCMExtras,
	supportedSetFilterState,
	supportedJSONToMetadata,
	supportedMatchingCommon,
	supportedAPIKeyAuth,
	supportedCredentialInjector,
	supportedKillRequest,
	supportedBandwidthLimit,
	supportedGrpcReverseBridge,
	supportedCustomResponsePolicy,
	supportedClusterPolicies,
	supportedRouteTLSMatch,
	supportedEarlyMutation,
	supportedXFCCMatcher,
	supportedDNSFilter,
}

// supportIndex is every per-area table merged into one map, built on first
// use: the check looks up each populated field of every resource, and a
// control plane's 10,000 clusters made the walk over some forty tables a
// tenth of their validation. A field in two tables keeps the first
// table's rule, as the walk did.
var supportIndex = sync.OnceValue(func() map[protoreflect.FullName]fieldSupport {
	n := 0
	for _, t := range supportTables {
		n += len(t)
	}
	all := make(map[protoreflect.FullName]fieldSupport, n)
	for _, t := range supportTables {
		for name, rule := range t {
			if _, dup := all[name]; !dup {
				all[name] = rule
			}
		}
	}
	return all
})

// lookupSupport finds a field's support rule in the per-area tables.
func lookupSupport(name protoreflect.FullName) (fieldSupport, bool) {
	rule, ok := supportIndex()[name]
	return rule, ok
}
