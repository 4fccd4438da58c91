package datasource

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "body")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OUTRIGGER_DS_SET", "from the environment")
	t.Setenv("OUTRIGGER_DS_EMPTY", "")
	for name, tc := range map[string]struct {
		ds      *corev3.DataSource
		want    string
		wantErr string
	}{
		"empty":        {ds: &corev3.DataSource{}},
		"nil":          {},
		"inline bytes": {ds: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte("b")}}, want: "b"},
		"inline string": {
			ds: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "s"}}, want: "s",
		},
		"file":         {ds: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: file}}, want: "from a file"},
		"missing file": {ds: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: filepath.Join(dir, "none")}}, wantErr: "filename: open " + filepath.Join(dir, "none") + ": no such file or directory"},
		"variable": {
			ds:   &corev3.DataSource{Specifier: &corev3.DataSource_EnvironmentVariable{EnvironmentVariable: "OUTRIGGER_DS_SET"}},
			want: "from the environment",
		},
		"variable set to nothing": {
			ds: &corev3.DataSource{Specifier: &corev3.DataSource_EnvironmentVariable{EnvironmentVariable: "OUTRIGGER_DS_EMPTY"}},
		},
		"variable not set": {
			ds:      &corev3.DataSource{Specifier: &corev3.DataSource_EnvironmentVariable{EnvironmentVariable: "OUTRIGGER_DS_UNSET"}},
			wantErr: "environment_variable: OUTRIGGER_DS_UNSET is not set",
		},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Read(tc.ds)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Read: error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if string(b) != tc.want {
				t.Fatalf("Read = %q, want %q", b, tc.want)
			}
		})
	}
}

// Callers that build the field path themselves (the access log's
// text_format_source) take the bare reason out of Env's error.
func TestEnvErrorWrapsTheReason(t *testing.T) {
	_, err := Env("OUTRIGGER_DS_UNSET")
	if err == nil {
		t.Fatal("Env of an unset variable: no error")
	}
	if got, want := err.Error(), "environment_variable: OUTRIGGER_DS_UNSET is not set"; got != want {
		t.Fatalf("Env error %q, want %q", got, want)
	}
	if got, want := errors.Unwrap(err).Error(), "OUTRIGGER_DS_UNSET is not set"; got != want {
		t.Fatalf("unwrapped %q, want %q", got, want)
	}
	t.Setenv("OUTRIGGER_DS_SET", "v")
	if v, err := Env("OUTRIGGER_DS_SET"); err != nil || v != "v" {
		t.Fatalf("Env = %q, %v; want v", v, err)
	}
}
