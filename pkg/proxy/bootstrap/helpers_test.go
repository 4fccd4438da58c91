package bootstrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// checkGolden compares got with testdata/<name>, or rewrites the file with
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// writeTemp writes content to a file called name in a fresh temporary
// directory and returns its path.
func writeTemp(t *testing.T, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadFixture loads a testdata file that must load cleanly.
func loadFixture(t *testing.T, name string) *bootstrapv3.Bootstrap {
	t.Helper()
	l, err := Load(LoadOptions{ConfigPath: filepath.Join("testdata", name)})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return l.Bootstrap
}

// errorLines splits a (joined) error into its lines; nil gives nil.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// fieldErrors unwraps a joined error into its *FieldErrors, failing the test
// if any part is not one.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %q is not a joined error", err)
	}
	var out []*FieldError
	for _, e := range joined.Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q is not a *FieldError", e)
		}
		out = append(out, fe)
	}
	return out
}

// marshal encodes m deterministically.
func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rawAny builds an Any from a type URL and raw bytes, as a binary
// configuration carries it.
func rawAny(typeURL string, value []byte) *anypb.Any {
	return &anypb.Any{TypeUrl: typeURL, Value: value}
}

// accessLogs wraps typed configs in admin access log entries.
func accessLogs(configs ...*anypb.Any) []*accesslogv3.AccessLog {
	out := make([]*accesslogv3.AccessLog, len(configs))
	for i, c := range configs {
		out[i] = &accesslogv3.AccessLog{Name: "log", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: c}}
	}
	return out
}

// The type URLs of extensions the tests configure.
const (
	hcmURL    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	fileURL   = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
)
