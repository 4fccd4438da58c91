package runtime

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// bools is a BoolReader over fixed values, read as a Snapshot reads them.
type bools map[string]string

func (b bools) Bool(key string, def bool) bool {
	return (&Snapshot{values: b}).Bool(key, def)
}

func TestFeatureFlag(t *testing.T) {
	off := &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(false), RuntimeKey: "f.on"}
	tests := map[string]struct {
		flag *corev3.RuntimeFeatureFlag
		r    BoolReader
		want bool
	}{
		"nil flag is enabled":         {want: true},
		"default":                     {flag: off, r: bools{}, want: false},
		"runtime key overrides":       {flag: off, r: bools{"f.on": "true"}, want: true},
		"other values keep default":   {flag: off, r: bools{"f.on": "1"}, want: false},
		"no reader keeps the default": {flag: off, want: false},
		"no key reads no runtime": {
			flag: &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(true)}, r: bools{"": "false"}, want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FeatureFlagOf(tc.flag).Enabled(tc.r); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
}
