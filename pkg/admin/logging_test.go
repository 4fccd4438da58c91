package admin

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestLoggingEndpoint(t *testing.T) {
	post := func(target string) request { return request{method: http.MethodPost, target: target} }
	// Every /logging request validates against the current loggers and
	// fine-grain mode, then lists the loggers.
	read := []string{"Logs.Loggers", "Logs.FineGrain"}
	list := []string{"Logs.Loggers"}
	calls := func(mid ...string) []string { return slices.Concat(read, mid, list) }

	runEndpointCases(t, "logging", map[string]endpointCase{
		"list": {
			req:   post("/logging"),
			calls: calls(),
		},
		"list-empty-level-and-paths": {
			req:   post("/logging?level=&paths="),
			calls: calls(),
		},
		"level": {
			req:   post("/logging?level=debug"),
			calls: calls("Logs.SetAllLevels debug"),
		},
		"level-with-empty-paths": {
			req:   post("/logging?level=error&paths="),
			calls: calls("Logs.SetAllLevels error"),
		},
		"level-warn-refused": {
			req:   post("/logging?level=warn"),
			calls: calls(),
		},
		"paths-colon": {
			req:   post("/logging?paths=admin:debug,http:trace"),
			calls: calls("Logs.SetLevels admin=debug http=trace"),
		},
		"paths-equals-and-spaces": {
			req:   post("/logging?paths=" + "admin%3Dcritical,+http+=+off+,,+"),
			calls: calls("Logs.SetLevels admin=critical http=off"),
		},
		"paths-only-separators": {
			req:   post("/logging?paths=,%20,"),
			calls: calls(),
		},
		"paths-unknown-logger": {
			req:   post("/logging?paths=admin:debug,nope:trace"),
			calls: calls(),
		},
		"paths-unknown-level": {
			req:   post("/logging?paths=admin:debug,http:loud"),
			calls: calls(),
		},
		"paths-empty-level": {
			req:   post("/logging?paths=admin"),
			calls: calls(),
		},
		"paths-empty-name": {
			req:   post("/logging?paths=:debug"),
			calls: calls(),
		},
		"too-many-parameters": {
			req:   post("/logging?paths=admin:trace&level=info"),
			calls: calls(),
		},
		"single-logger": {
			req:   post("/logging?upstream=trace"),
			calls: calls("Logs.SetLevels upstream=trace"),
		},
		"single-logger-unknown": {
			req:   post("/logging?nope=trace"),
			calls: calls(),
		},
		"single-logger-bad-level": {
			req:   post("/logging?admin=warn"),
			calls: calls(),
		},
		"single-logger-empty-level": {
			req:   post("/logging?admin"),
			calls: calls(),
		},
		"fine-grain-globs": {
			setup: func(f *fakes) {
				f.fineGrain = true
				f.loggers = []LoggerLevel{{Name: "source/common/a.go", Level: "info"}, {Name: "source/server/b.go", Level: "info"}}
			},
			req:   post("/logging?paths=source/common*:warning,never/matches.go:off"),
			calls: calls("Logs.SetLevels never/matches.go=off source/common*=warning"),
		},
		"form-body": {
			req:   request{method: http.MethodPost, target: "/logging", body: "paths=&level=critical", header: formHeader()},
			calls: calls("Logs.SetAllLevels critical"),
		},
		"set-error": {
			setup: func(f *fakes) { f.setErr = errTest },
			req:   post("/logging?paths=admin:debug"),
			calls: calls("Logs.SetLevels admin=debug"),
		},
		"reopen_logs": {
			req:   post("/reopen_logs"),
			calls: []string{"Logs.ReopenLogs"},
		},
		"reopen_logs-error": {
			setup: func(f *fakes) { f.reopenErr = errTest },
			req:   post("/reopen_logs"),
			calls: []string{"Logs.ReopenLogs"},
		},
	})
}

func TestParseLogChange(t *testing.T) {
	loggers := []LoggerLevel{{Name: "admin"}, {Name: "http"}}
	tests := map[string]struct {
		query     string
		fineGrain bool
		want      logChange
		err       error
	}{
		"nothing":             {query: "", want: logChange{}},
		"all":                 {query: "level=off", want: logChange{all: "off"}},
		"all bad":             {query: "level=Info", err: errUnknownLevel},
		"paths":               {query: "paths=admin:info,http=error", want: logChange{levels: map[string]string{"admin": "info", "http": "error"}}},
		"paths later wins":    {query: "paths=admin:info,admin:trace", want: logChange{levels: map[string]string{"admin": "trace"}}},
		"paths unknown name":  {query: "paths=admin:info,x:info", err: errUnknownLogger},
		"paths fine grain":    {query: "paths=x:info", fineGrain: true, want: logChange{levels: map[string]string{"x": "info"}}},
		"paths missing level": {query: "paths=admin:", err: errEmptyLoggerPair},
		"single":              {query: "http=debug", want: logChange{levels: map[string]string{"http": "debug"}}},
		"single unknown":      {query: "x=debug", err: errUnknownLogger},
		"two parameters":      {query: "a=debug&b=debug", err: errLoggingParamCount},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseLogChange(ParseQuery(tc.query), loggers, tc.fineGrain)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if got.all != tc.want.all || !maps.Equal(got.levels, tc.want.levels) {
				t.Errorf("change = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseLoggerPaths checks that any paths value is either refused or
// yields trimmed, non-empty names with valid levels.
func FuzzParseLoggerPaths(f *testing.F) {
	for _, s := range []string{"admin:debug", "a=b,c:d", " , ,", "a:", ":b", "a:b:c", "x:trace,x:off", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, paths string) {
		levels, err := parseLoggerPaths(paths)
		if err != nil {
			if levels != nil {
				t.Fatalf("levels %v returned with error %v", levels, err)
			}
			return
		}
		for name, level := range levels {
			if name == "" || name != strings.TrimSpace(name) {
				t.Fatalf("bad name %q from %q", name, paths)
			}
			if !slices.Contains(levelNames, level) {
				t.Fatalf("bad level %q from %q", level, paths)
			}
			if !strings.Contains(paths, name) {
				t.Fatalf("name %q not in %q", name, paths)
			}
		}
	})
}
