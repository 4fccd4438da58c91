package httpmatch

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	envvarv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/environment_variable/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	metadatamatchv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/input_matchers/metadata/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// CELData is data the CEL input (envoy.matching.inputs.cel_data_input,
// xds.type.matcher.v3.HttpAttributesCelMatchInput) reads: it fills the
// attributes an expression sees with what the stream has so far.
type CELData interface {
	FillCEL(a *cel.Activation)
}

// MetadataData is data whose dynamic metadata the dynamic_metadata input
// (envoy.matching.inputs.dynamic_metadata) reads; nil is none.
type MetadataData interface {
	DynamicMetadata() *corev3.Metadata
}

// The type names of the inputs and matchers of this file, for the
// configuration's support table.
const (
	celInput         = "xds.type.matcher.v3.HttpAttributesCelMatchInput"
	metadataInput    = "envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput"
	envInput         = "envoy.extensions.matching.common_inputs.environment_variable.v3.Config"
	celMatcherType   = "xds.type.matcher.v3.CelMatcher"
	metadataMatchTyp = "envoy.extensions.matching.input_matchers.metadata.v3.Metadata"
)

// CommonInputTypes are the inputs every matcher compiled with Compile or
// CompileProbedEnv takes (on data implementing CELData or MetadataData
// for the first two), and CustomMatcherTypes the custom matchers of
// their data.
var (
	CommonInputTypes   = []string{celInput, metadataInput, envInput}
	CustomMatcherTypes = []string{celMatcherType, metadataMatchTyp}
)

// celEnv is the CEL environment of a tree's CEL matchers, made once for
// the whole tree, on the first one.
type celEnv struct {
	once sync.Once
	env  *cel.Env
	err  error
}

func (c *celEnv) get() (*cel.Env, error) {
	c.once.Do(func() { c.env, c.err = cel.NewEnv() })
	return c.env, c.err
}

// implements reports whether every D is an I: a concrete type that has
// I's methods, or an interface that includes them.
func implements[D, I any]() bool {
	return reflect.TypeFor[D]().Implements(reflect.TypeFor[I]())
}

// compileCommonInput compiles the environment_variable input, which
// Envoy registers for every kind of data: the variable's value when the
// configuration loads (Envoy reads it once, when it builds the input), no
// value when it is unset. ok is false for another input.
func compileCommonInput[D any](tc *xdscorev3.TypedExtensionConfig, path string) (p Probe[D], ok bool, err error) {
	if tc.GetTypedConfig().MessageName() != envInput {
		return nil, false, nil
	}
	msg, err := TypedConfig(tc, path, "an input")
	if err != nil {
		return nil, true, err
	}
	name := msg.(*envvarv3.Config).GetName()
	if name == "" {
		return nil, true, errors.New(path + ".typed_config.name: must be set")
	}
	v, set := os.LookupEnv(name)
	return func(D) (string, bool, bool) { return v, set, true }, true, nil
}

// compileCustomData compiles a single_predicate whose input gives Envoy's
// custom match data rather than a string: the CEL input with the CEL
// matcher, the dynamic_metadata input with the metadata matcher. ok is
// false for a string input. Those inputs need data that can give what
// they read (CELData, MetadataData) and the one matcher that reads their
// data; anything else is refused with its path, where Envoy would build
// a predicate that never matches.
func compileCustomData[D any](sp *xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate, path string, input inputs[D]) (predicate[D], bool, error) {
	inPath := path + ".single_predicate.input"
	name := sp.GetInput().GetTypedConfig().MessageName()
	if name != celInput && name != metadataInput {
		return nil, false, nil
	}
	msg, err := TypedConfig(sp.GetInput(), inPath, "an input")
	if err != nil {
		return nil, true, err
	}
	wantMatcher := celMatcherType
	if name == metadataInput {
		wantMatcher = metadataMatchTyp
	}
	cm := sp.GetCustomMatch()
	if cm == nil {
		return nil, true, fmt.Errorf("%s.single_predicate.value_match: the data of input %s is matched only by the custom_match %s", path, name, wantMatcher)
	}
	mPath := path + ".single_predicate.custom_match"
	mmsg, err := TypedConfig(cm, mPath, "an input matcher")
	if err != nil {
		return nil, true, err
	}
	if string(proto.MessageName(mmsg)) != wantMatcher {
		return nil, true, fmt.Errorf("%s.typed_config: input matcher %s cannot match the data of input %s (only %s can)", mPath, proto.MessageName(mmsg), name, wantMatcher)
	}
	switch in := msg.(type) {
	case *xdsmatcherv3.HttpAttributesCelMatchInput:
		if !implements[D, CELData]() {
			return nil, true, fmt.Errorf("%s.typed_config: input %s reads HTTP attributes, which this matcher does not have", inPath, name)
		}
		p, err := compileCELMatcher[D](mmsg.(*xdsmatcherv3.CelMatcher), mPath+".typed_config", input.cel)
		return p, true, err
	case *networkinputsv3.DynamicMetadataInput:
		if !implements[D, MetadataData]() {
			return nil, true, fmt.Errorf("%s.typed_config: input %s reads the stream's dynamic metadata, which this matcher does not have", inPath, name)
		}
		p, err := compileMetadataMatcher[D](in, inPath+".typed_config", mmsg.(*metadatamatchv3.Metadata), mPath+".typed_config")
		return p, true, err
	}
	return nil, true, fmt.Errorf("%s.typed_config: unexpected %s", inPath, name)
}

// compileCELMatcher compiles xds.type.matcher.v3.CelMatcher: the
// expression over the stream's attributes, which matches when it
// evaluates to true; an error (an attribute the stream does not have yet)
// or another value does not match, as Envoy's CelInputMatcher.
func compileCELMatcher[D any](c *xdsmatcherv3.CelMatcher, path string, envs *celEnv) (predicate[D], error) {
	env, err := envs.get()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	prg, err := compileCELExpression(env, c.GetExprMatch(), path+".expr_match")
	if err != nil {
		return nil, err
	}
	pool := &sync.Pool{New: func() any { return new(cel.Activation) }}
	return func(d D) (bool, bool) {
		a := pool.Get().(*cel.Activation)
		*a = cel.Activation{}
		any(d).(CELData).FillCEL(a)
		m := prg.Matches(a)
		*a = cel.Activation{} // drop the stream's references before pooling
		pool.Put(a)
		return m, true
	}, nil
}

// compileMetadataMatcher compiles the dynamic_metadata input with the
// metadata matcher: the value at the input's filter and path, matched by
// the value matcher, the result flipped by invert (a missing value
// included), as Envoy's metadata input matcher.
func compileMetadataMatcher[D any](in *networkinputsv3.DynamicMetadataInput, inPath string, m *metadatamatchv3.Metadata, mPath string) (predicate[D], error) {
	if in.GetFilter() == "" {
		return nil, errors.New(inPath + ".filter: must be set")
	}
	if len(in.GetPath()) == 0 {
		return nil, errors.New(inPath + ".path: at least one segment is required")
	}
	if m.GetValue() == nil {
		return nil, errors.New(mPath + ".value: must be set")
	}
	mm := &matcherv3.MetadataMatcher{Filter: in.GetFilter(), Value: m.GetValue(), Invert: m.GetInvert()}
	for i, seg := range in.GetPath() {
		if seg.GetKey() == "" {
			return nil, fmt.Errorf("%s.path[%d].key: must be set", inPath, i)
		}
		mm.Path = append(mm.Path, &matcherv3.MetadataMatcher_PathSegment{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: seg.GetKey()}})
	}
	compiled, err := filter.CompileMetadataMatcher(mm)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", mPath, err)
	}
	return func(d D) (bool, bool) {
		return compiled.Match(any(d).(MetadataData).DynamicMetadata()), true
	}, nil
}
