package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// TestJSONPattern: the struct becomes compact JSON with sorted keys, and
// records rendered with it are JSON objects whose message is escaped by
// %j; %v and %_ are refused.
func TestJSONPattern(t *testing.T) {
	s, err := structpb.NewStruct(map[string]any{"message": "%j", "level": "%l", "logger": "%n", "html": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := JSONPattern(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"html":"<&>","level":"%l","logger":"%n","message":"%j"}`; p != want {
		t.Fatalf("pattern %s, want %s", p, want)
	}
	var out bytes.Buffer
	r, err := New(Config{Level: LevelInfo, Format: p, Stderr: &out, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	Warning(r.Logger("main"), "a \"quoted\"\nline")
	var got map[string]string
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("record %q is not JSON: %v", out.String(), err)
	}
	if got["message"] != "a \"quoted\"\nline" || got["level"] != "warning" || got["logger"] != "main" {
		t.Errorf("record %v", got)
	}
	for _, flag := range []string{"%v", "%_"} {
		s, _ := structpb.NewStruct(map[string]any{"m": "x " + flag})
		if _, err := JSONPattern(s); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: error %v", flag, err)
		}
	}
}

// TestSetFormat: records after SetFormat take the new pattern; a bad
// pattern changes nothing.
func TestSetFormat(t *testing.T) {
	var out bytes.Buffer
	r, err := New(Config{Level: LevelInfo, Format: "old %v", Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	log := r.Logger("main")
	Warning(log, "one")
	if err := r.SetFormat("new %v"); err != nil {
		t.Fatal(err)
	}
	Warning(log, "two")
	if err := r.SetFormat("bad %"); err == nil {
		t.Error("a pattern ending in % was accepted")
	}
	Warning(log, "three")
	if want := "old one\nnew two\nnew three\n"; out.String() != want {
		t.Errorf("records %q, want %q", out.String(), want)
	}
}
