package admin

import (
	"bytes"
	"errors"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestMarshalProto(t *testing.T) {
	tests := map[string]struct {
		msg         proto.Message
		alwaysPrint bool
		want        string
	}{
		"empty message": {
			msg:  &adminv3.Memory{},
			want: "{}\n",
		},
		"empty message, always print": {
			msg:         &adminv3.MutexStats{},
			alwaysPrint: true,
			want:        "{\n \"num_contentions\": \"0\",\n \"current_wait_cycles\": \"0\",\n \"lifetime_wait_cycles\": \"0\"\n}\n",
		},
		"64-bit integers as strings, defaults omitted": {
			msg:  &adminv3.Memory{Allocated: 5217336, TotalPhysicalBytes: 1 << 40},
			want: "{\n \"allocated\": \"5217336\",\n \"total_physical_bytes\": \"1099511627776\"\n}\n",
		},
		"empty list omitted": {
			msg:  &adminv3.Certificates{Certificates: []*adminv3.Certificate{{}}},
			want: "{\n \"certificates\": [\n  {}\n ]\n}\n",
		},
		"empty lists printed (Envoy's ContextThatReturnsNullCertDetails)": {
			msg:         &adminv3.Certificates{Certificates: []*adminv3.Certificate{{}}},
			alwaysPrint: true,
			want:        "{\n \"certificates\": [\n  {\n   \"ca_cert\": [],\n   \"cert_chain\": []\n  }\n ]\n}\n",
		},
		"no certificates, always print": {
			msg:         &adminv3.Certificates{},
			alwaysPrint: true,
			want:        "{\n \"certificates\": []\n}\n",
		},
		"enum by name, duration, snake_case names": {
			msg: &adminv3.ServerInfo{
				State:              adminv3.ServerInfo_DRAINING,
				UptimeCurrentEpoch: durationpb.New(6e9),
				HotRestartVersion:  "1.60.16384",
			},
			want: "{\n \"state\": \"DRAINING\",\n \"uptime_current_epoch\": \"6s\",\n \"hot_restart_version\": \"1.60.16384\"\n}\n",
		},
		"default enum printed only with always print": {
			msg:         &adminv3.ServerInfo{},
			alwaysPrint: true,
			want:        "{\n \"version\": \"\",\n \"state\": \"LIVE\",\n \"hot_restart_version\": \"\",\n \"hot_restart_initializing\": false\n}\n",
		},
		"strings are not HTML-escaped": {
			msg:  &adminv3.CertificateDetails{Path: "<a&b>"},
			want: "{\n \"path\": \"<a&b>\"\n}\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := MarshalProto(tc.msg, tc.alwaysPrint)
			if err != nil {
				t.Fatalf("MarshalProto: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("MarshalProto:\n got %q\nwant %q", got, tc.want)
			}
			var buf bytes.Buffer
			if err := WriteProto(&buf, tc.msg, tc.alwaysPrint); err != nil {
				t.Fatalf("WriteProto: %v", err)
			}
			if buf.String() != tc.want {
				t.Errorf("WriteProto wrote %q, want %q", buf.String(), tc.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errTest }

func TestWriteProtoWriteError(t *testing.T) {
	err := WriteProto(failingWriter{}, &adminv3.Memory{}, false)
	if !errors.Is(err, errTest) {
		t.Errorf("WriteProto error = %v, want one wrapping %v", err, errTest)
	}
}
