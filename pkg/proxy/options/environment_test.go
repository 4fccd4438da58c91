package options

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    int
		wantErr bool
	}{
		"one cpu":            {in: "0\n", want: 1},
		"range":              {in: "0-3\n", want: 4},
		"ranges and singles": {in: "0-3,6,8-9", want: 7},
		"single-cpu range":   {in: "5-5", want: 1},
		"largest allowed":    {in: "0-65535", want: 65536},
		"empty":              {in: "\n", wantErr: true},
		"reversed":           {in: "3-1", wantErr: true},
		"not a number":       {in: "a", wantErr: true},
		"open range":         {in: "0-", wantErr: true},
		"empty item":         {in: "0,,1", wantErr: true},
		"negative":           {in: "-1", wantErr: true},
		"too large a cpu":    {in: "65536", wantErr: true},
		"too many cpus":      {in: "0-65535,0-1", wantErr: true},
		"overflowing index":  {in: "0-99999999999999999999", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := CountCPUList(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Errorf("CountCPUList(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("CountCPUList(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestReadOnlineCPUs(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "online")
	if err := os.WriteFile(good, []byte("0-1,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path    string
		want    int
		wantErr bool
	}{
		"readable":  {path: good, want: 3},
		"malformed": {path: bad, wantErr: true},
		"missing":   {path: filepath.Join(dir, "missing"), wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := readOnlineCPUs(tc.path)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("readOnlineCPUs(%s) = %d, %v; want %d (error: %v)", tc.path, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDefaultEnvironment(t *testing.T) {
	env := DefaultEnvironment()
	if env.HardwareThreads < 1 {
		t.Errorf("HardwareThreads = %d, want at least 1", env.HardwareThreads)
	}
	if env.CPUSetSize == nil {
		t.Fatal("CPUSetSize is nil")
	}
	if n, err := env.CPUSetSize(); err == nil && n < 1 {
		t.Errorf("CPUSetSize() = %d without error, want at least 1", n)
	}
	// The default environment must give a usable worker count.
	o, err := Parse([]string{"--config-yaml", "{}", "--cpuset-threads"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.Concurrency < 1 {
		t.Errorf("Concurrency = %d, want at least 1", o.Concurrency)
	}
}
