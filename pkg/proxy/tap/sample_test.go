package tap

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// runtimeValues is a runtime.Reader over fixed values.
type runtimeValues map[string]uint64

func (r runtimeValues) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

func enabled(t *testing.T, key string, num uint32) *Config {
	t.Helper()
	f, err := compileEnabled(&corev3.RuntimeFractionalPercent{RuntimeKey: key,
		DefaultValue: &typev3.FractionalPercent{Numerator: num, Denominator: typev3.FractionalPercent_HUNDRED}}, "tap_enabled")
	if err != nil {
		t.Fatal(err)
	}
	return &Config{Enabled: f}
}

// TestSampled draws each share 200 times: 0% and 100% are certain, so
// the counts are exact; the runtime key's value replaces the default.
func TestSampled(t *testing.T) {
	rt := runtimeValues{"tap.on": 100, "tap.off": 0}
	cases := map[string]struct {
		c    *Config
		want int
	}{
		"unset":               {&Config{}, 200},
		"0%":                  {enabled(t, "", 0), 0},
		"100%":                {enabled(t, "", 100), 200},
		"runtime 100 over 0%": {enabled(t, "tap.on", 0), 200},
		"runtime 0 over 100%": {enabled(t, "tap.off", 100), 0},
		"no runtime value":    {enabled(t, "tap.unset", 0), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := 0
			for range 200 {
				if tc.c.Sampled(rt) {
					n++
				}
			}
			if n != tc.want {
				t.Errorf("sampled %d of 200, want %d", n, tc.want)
			}
		})
	}
	if _, err := compileEnabled(&corev3.RuntimeFractionalPercent{RuntimeKey: "k"}, "tap_config.tap_enabled"); err == nil ||
		err.Error() != "tap_config.tap_enabled.default_value: required" {
		t.Errorf("no default_value: %v", err)
	}
}

// TestConfiguredSampleRate: a buffered trace carries tap_enabled's default
// value; a streamed one on its first segment only; none without
// tap_enabled.
func TestConfiguredSampleRate(t *testing.T) {
	rate := &typev3.FractionalPercent{Numerator: 25, Denominator: typev3.FractionalPercent_TEN_THOUSAND}
	for _, streaming := range []bool{false, true} {
		sink := &recordSink{}
		c := streamingConfig(t, `any_match: true`, sink)
		c.Streaming, c.SampleRate = streaming, rate
		tr := c.NewTrace()
		exchange(tr, "200")
		tr.Finish()
		if len(sink.got) == 0 {
			t.Fatalf("streaming=%v: nothing traced", streaming)
		}
		for i, w := range sink.got {
			got := w.GetConfiguredSampleRate()
			if want := i == 0; (got != nil) != want || (got != nil && (got.GetNumerator() != 25 || got.GetDenominator() != typev3.FractionalPercent_TEN_THOUSAND)) {
				t.Errorf("streaming=%v: message %d configured_sample_rate %v", streaming, i, got)
			}
		}
	}
	sink := &recordSink{}
	tr := streamingConfig(t, `any_match: true`, sink).NewTrace()
	exchange(tr, "200")
	tr.Finish()
	for i, w := range sink.got {
		if w.GetConfiguredSampleRate() != nil {
			t.Errorf("message %d has a sample rate without tap_enabled", i)
		}
	}
}
