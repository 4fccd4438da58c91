package chart

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLint(t *testing.T) {
	tests := map[string]struct {
		values string
	}{
		"default values": {},
		"every option":   {values: filepath.Join("testdata", "full-values.yaml")},
		"webhook off":    {values: filepath.Join("testdata", "webhook-off-values.yaml")},
		"self-signed":    {values: filepath.Join("testdata", "selfsigned-values.yaml")},
		"monitoring":     {values: filepath.Join("testdata", "monitoring-values.yaml")},
		"control plane":  {values: filepath.Join("testdata", "control-plane-values.yaml")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir(t)}
			if tc.values != "" {
				args = append(args, "--values", tc.values)
			}
			out := mustHelm(t, args...)
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Errorf("helm lint did not report success:\n%s", out)
			}
		})
	}
}
