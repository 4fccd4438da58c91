package bootstrap

import (
	"bytes"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

func textLogFormat(f string) *bootstrapv3.Bootstrap {
	return &bootstrapv3.Bootstrap{ApplicationLogConfig: &bootstrapv3.Bootstrap_ApplicationLogConfig{
		LogFormat: &bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat{
			LogFormat: &bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat_TextFormat{TextFormat: f},
		},
	}}
}

func jsonLogFormat(t *testing.T, m map[string]any) *bootstrapv3.Bootstrap {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return &bootstrapv3.Bootstrap{ApplicationLogConfig: &bootstrapv3.Bootstrap_ApplicationLogConfig{
		LogFormat: &bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat{
			LogFormat: &bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat_JsonFormat{JsonFormat: s},
		},
	}}
}

func TestApplicationLogFormat(t *testing.T) {
	for name, tc := range map[string]struct {
		b       *bootstrapv3.Bootstrap
		want    string
		wantErr string
	}{
		"none":          {b: &bootstrapv3.Bootstrap{}},
		"text":          {b: textLogFormat("[%l] %v"), want: "[%l] %v"},
		"empty text":    {b: textLogFormat(""), wantErr: "application_log_config.log_format.text_format: must not be empty"},
		"dangling text": {b: textLogFormat("%v %"), wantErr: "application_log_config.log_format.text_format: "},
		"json":          {b: jsonLogFormat(t, map[string]any{"msg": "%j", "lvl": "%l"}), want: `{"lvl":"%l","msg":"%j"}`},
		"json with %v":  {b: jsonLogFormat(t, map[string]any{"msg": "%v"}), wantErr: "application_log_config.log_format.json_format: usage of %v"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ApplicationLogFormat(tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestApplyApplicationLogFormat: the format applies to the records that
// follow, and cannot be given together with --log-format.
func TestApplyApplicationLogFormat(t *testing.T) {
	var out bytes.Buffer
	logs, err := logging.New(logging.Config{Level: logging.LevelInfo, Format: "%v", Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	b := textLogFormat("app [%n] %v")
	if err := ApplyApplicationLogFormat(b, true, logs); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("with --log-format: %v", err)
	}
	if err := ApplyApplicationLogFormat(b, false, logs); err != nil {
		t.Fatal(err)
	}
	logging.Warning(logs.Logger("main"), "hello")
	if out.String() != "app [main] hello\n" {
		t.Errorf("record %q", out.String())
	}
}
