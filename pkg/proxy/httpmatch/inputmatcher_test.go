package httpmatch

import (
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// custom is a matcher_list whose one predicate is the custom input
// matcher of typed config js over the field "v", matching "yes", with
// on_no_match "no".
func custom(js string) string {
	return `{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + field("v") + `,
	  "custom_match": {"name": "m", "typed_config": ` + js + `}}}, "on_match": ` + action("yes") + `}]},
	 "on_no_match": ` + action("no") + `}`
}

func v(s string) fields { return fields{values: map[string]string{"v": s}} }

// The known vectors of xxHash64 with seed 0 (XXH64("") and XXH64("a")):
// Envoy's HashUtil::xxHash64.
func TestHashWithSeedVectors(t *testing.T) {
	if got := hashWithSeed("", 0); got != 0xef46db3751d8e999 {
		t.Errorf("xxHash64(\"\") = %#x", got)
	}
	if got := hashWithSeed("a", 0); got != 0xd24ec4f1a98c6e5b {
		t.Errorf("xxHash64(\"a\") = %#x", got)
	}
	if hashWithSeed("a", 1) == hashWithSeed("a", 0) {
		t.Error("the seed does not change the hash")
	}
}

func TestIPInputMatcher(t *testing.T) {
	store := stats.NewStore()
	sc := store.Scope("listener.x.")
	js := custom(`{"@type": "type.googleapis.com/envoy.extensions.matching.input_matchers.ip.v3.Ip", "stat_prefix": "fcm.",
	  "cidr_ranges": [{"address_prefix": "10.0.0.0", "prefix_len": 8}, {"address_prefix": "2001:db8::", "prefix_len": 32}]}`)
	m, err := CompileProbedEnv(parse(t, js), actionName, fieldProbe, Env{Stats: &sc})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"10.1.2.3": "yes", "2001:db8::7": "yes", "11.0.0.1": "no",
		"::ffff:10.1.2.3": "no", // an IPv6 address, as Envoy parses it
		"":                "no", "not-an-address": "no", "10.1.2.3:80": "no",
	} {
		if got, _ := m.Match(v(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
	if n := store.Counter("listener.x.fcm.ip_parsing_failed").Value(); n != 2 {
		t.Errorf("ip_parsing_failed = %d, want 2 (the empty value is not parsed)", n)
	}
}

func TestConsistentHashingInputMatcher(t *testing.T) {
	ch := func(threshold, modulo int) string {
		return custom(`{"@type": "type.googleapis.com/envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing",
		  "threshold": ` + strconv.Itoa(threshold) + `, "modulo": ` + strconv.Itoa(modulo) + `}`)
	}
	// xxHash64("a") % 100 is 55 and xxHash64("") % 100 is 21.
	runEvaluate(t, ch(50, 100), []evaluateCase{
		{"at or above the threshold", v("a"), "yes", true, true},
		{"below", v(""), "no", true, true},
		{"absent", fields{}, "no", true, true},
	})
	runEvaluate(t, ch(56, 100), []evaluateCase{{"just below", v("a"), "no", true, true}})
	runEvaluate(t, ch(55, 100), []evaluateCase{{"at", v("a"), "yes", true, true}})
	for name, tc := range map[string]struct{ js, want string }{
		"threshold above modulo": {ch(101, 100), "threshold cannot be greater than modulo: 101 > 100"},
		"no modulo":              {ch(0, 0), "typed_config.modulo: must be above 0"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileProbed(parse(t, tc.js), actionName, fieldProbe)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRuntimeFractionInputMatcher(t *testing.T) {
	js := custom(`{"@type": "type.googleapis.com/envoy.extensions.matching.input_matchers.runtime_fraction.v3.RuntimeFraction",
	  "runtime_fraction": {"runtime_key": "canary", "default_value": {"numerator": 56, "denominator": "HUNDRED"}}}`)
	if _, err := CompileProbed(parse(t, js), actionName, fieldProbe); err == nil || !strings.Contains(err.Error(), "runtime_fraction matcher is not available here") {
		t.Fatalf("without a runtime: %v", err)
	}
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := CompileProbedEnv(parse(t, js), actionName, fieldProbe, Env{Runtime: rt.Latest()})
	if err != nil {
		t.Fatal(err)
	}
	// The value's hash is the draw: "a" (55 of 100) is in a 56% share.
	if got, _ := m.Match(v("a")); got != "yes" {
		t.Errorf("56%%: %s, want yes", got)
	}
	if err := rt.Modify(map[string]string{"canary": "55"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Match(v("a")); got != "no" {
		t.Errorf("the runtime's 55%%: %s, want no", got)
	}
}
