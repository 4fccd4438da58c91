package accesslog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestOperators renders every operator (and its argument forms) for a
// full entry and an empty one; the lines are in testdata/operators.golden.
func TestOperators(t *testing.T) {
	formats := []string{
		"%START_TIME%",
		"%START_TIME()%",
		"%START_TIME(%Y/%m/%dT%H:%M:%S%z %s)%",
		"%START_TIME(%s.%3f)%",
		"%START_TIME(%s.%6f|%9f|%f|%1f)%",
		"%START_TIME(%E3S|%E*S|%E0S|%Ez|%Z)%",
		"%START_TIME(%a %A %b %h %B %e %j %I %p %y %T %D %F %R %%|%n|%t)%",
		"%REQ(:METHOD)% %REQ(:PATH)% %REQ(:AUTHORITY)% %REQ(HOST)% %REQ(:SCHEME)%",
		"%REQ(USER-AGENT)% %REQ(user-agent)%",
		"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
		"%REQ(X-MISSING?USER-AGENT)% %REQ(X-MISSING?X-ALSO-MISSING)%",
		"%REQ(X-REQUEST-ID):8%",
		"%REQ(X-EMPTY)%|",
		"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% %RESP(CONTENT-TYPE):11% %RESP(:STATUS)% %RESP(X-NONE?:STATUS)%",
		"%TRAILER(GRPC-STATUS)% %TRAILER(GRPC-MESSAGE)%",
		"%PROTOCOL% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% %RESPONSE_FLAGS%",
		"%BYTES_RECEIVED% %BYTES_SENT%",
		"%DURATION% %REQUEST_DURATION% %RESPONSE_DURATION%",
		"%UPSTREAM_HOST% %UPSTREAM_CLUSTER% %UPSTREAM_LOCAL_ADDRESS% %UPSTREAM_TRANSPORT_FAILURE_REASON%",
		"%DOWNSTREAM_REMOTE_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
		"%DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT%",
		"%REQUESTED_SERVER_NAME% %CONNECTION_ID% %ROUTE_NAME%",
		"%ROUTE_NAME:5% %UPSTREAM_CLUSTER:0%",
		"%ACCESS_LOG_TYPE% %ACCESS_LOG_TYPE:10%",
		"%FILTER_CHAIN_NAME% %DOWNSTREAM_TRANSPORT_FAILURE_REASON%",
		"100%% literal, %%PROTOCOL%% escaped",
		"",
	}
	var out strings.Builder
	for _, format := range formats {
		f, err := Text(format, false)
		if err != nil {
			t.Fatalf("Text(%q): %v", format, err)
		}
		omit, err := Text(format, true)
		if err != nil {
			t.Fatalf("Text(%q, omit): %v", format, err)
		}
		fmt.Fprintf(&out, "%s\n  full:  %q\n  empty: %q\n  omit:  %q\n", format,
			f.Append(nil, fullEntry()), f.Append(nil, &Entry{}), omit.Append(nil, &Entry{}))
	}
	golden.Check(t, "testdata/operators.golden", []byte(out.String()))
}

// TestDefaultFormatMatchesEnvoy reproduces the example line of Envoy's
// access-log documentation.
func TestDefaultFormatMatchesEnvoy(t *testing.T) {
	start := time.Date(2016, 4, 15, 20, 17, 0, 310_000_000, time.UTC)
	e := &Entry{
		StartTime: start, Method: "POST", Path: "/api/v1/locations", Protocol: "HTTP/2", Authority: "locations",
		RequestHeaders: headerMap{
			"x-forwarded-for": "10.0.35.28", "user-agent": "nsq2http",
			"x-request-id": "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2",
		},
		ResponseHeaders: headerMap{"x-envoy-upstream-service-time": "100"},
		ResponseCode:    204, BytesReceived: 154, BytesSent: 0, Duration: 226 * time.Millisecond,
		UpstreamHost: "tcp://10.0.2.1:80",
	}
	want := `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" ` +
		`"nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"` + "\n"
	if got := string(Default().Append(nil, e)); got != want {
		t.Errorf("default format:\n got %q\nwant %q", got, want)
	}
	// The original path wins over :path when the router rewrote it.
	e.RequestHeaders.(headerMap)["x-envoy-original-path"] = "/original"
	if got := string(Default().Append(nil, e)); !strings.Contains(got, `"POST /original HTTP/2"`) {
		t.Errorf("default format with a rewritten path: %q", got)
	}
}

func TestStartTimeInUTC(t *testing.T) {
	f, err := Text("%START_TIME%|%START_TIME(%H %z)%", false)
	if err != nil {
		t.Fatal(err)
	}
	zone := time.FixedZone("X", 5*3600+30*60)
	e := &Entry{StartTime: time.Date(2024, 1, 2, 3, 4, 5, 6_000_000, zone)}
	if got, want := string(f.Append(nil, e)), "2024-01-01T21:34:05.006Z|21 +0000"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestStartTimeSecondCache checks that START_TIME's per-second cache
// renders what an uncached rendering does, within a second, across a
// change of second (and of day), and back to an earlier second.
func TestStartTimeSecondCache(t *testing.T) {
	layouts := []string{"", "%Y-%m-%dT%H:%M:%E3SZ", "%s.%3f", "%E*S!", "%T %f %F", "%f %H", "%d/%b/%Y:%H:%M:%S %z", "plain"}
	base := time.Date(2024, 12, 31, 23, 59, 58, 120_000_000, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{0, 300 * time.Millisecond, 700 * time.Millisecond, time.Second + 880*time.Millisecond, 3 * time.Second, 0, -time.Hour} {
		times = append(times, base.Add(d))
	}
	for _, layout := range layouts {
		l, err := compileTimeLayout(layout, layout != "")
		if err != nil {
			t.Fatalf("%q: %v", layout, err)
		}
		if want := layout == "" || layout == defaultTimeLayout; l.millisZ != want {
			t.Errorf("%q: the milliseconds-and-Z ending is %v, want %v", layout, l.millisZ, want)
		}
		for _, at := range times {
			if got, want := string(l.append(nil, at)), string(render(nil, at, l.items)); got != want {
				t.Errorf("%q at %v: got %q, want %q", layout, at, got, want)
			}
		}
	}
}

// TestStartTimeFractionDigits checks the fixed-width fractions against
// the nanoseconds printed in full and cut.
func TestStartTimeFractionDigits(t *testing.T) {
	for _, ns := range []int{0, 6_000_000, 123_456_789, 999_999_999, 5} {
		full := fmt.Sprintf("%09d", ns)
		for digits := 1; digits <= 9; digits++ {
			if got, want := string(appendFraction(nil, ns, digits, true)), "."+full[:digits]; got != want {
				t.Errorf("%d ns, %d digits: got %q, want %q", ns, digits, got, want)
			}
		}
	}
}

func TestResponseFlags(t *testing.T) {
	tests := map[string]struct {
		flags ResponseFlags
		want  string
	}{
		"none":                        {flags: 0, want: "-"},
		"one":                         {flags: NoRouteFound, want: "NR"},
		"several in Envoy's order":    {flags: NoClusterFound | UpstreamConnectionFailure | NoHealthyUpstream, want: "UH,UF,NC"},
		"first and last":              {flags: UnconditionalDropOverload | FailedLocalHealthCheck, want: "LH,UDO"},
		"undefined bits are ignored":  {flags: 1 << 31, want: "-"},
		"downstream and rate limited": {flags: DownstreamConnectionTermination | RateLimited | UnauthorizedExternalService, want: "RL,UAEX,DC"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.flags.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
	// Every flag has its own distinct code.
	seen := map[string]bool{}
	for i := range flagCount {
		code := ResponseFlags(1 << i).String()
		if seen[code] || code == "-" || code == "" {
			t.Errorf("flag bit %d has code %q, already used or empty", i, code)
		}
		seen[code] = true
	}
}

func TestAppendAllocatesNothing(t *testing.T) {
	text := Default()
	withTime, err := Text("%START_TIME(%s.%3f %a %Z)% %REQ(X-QUOTE)% %RESPONSE_FLAGS%\n", false)
	if err != nil {
		t.Fatal(err)
	}
	js := mustJSON(t, `{"a": "%REQ(X-QUOTE)%", "b": "%DURATION%", "c": {"d": "%RESPONSE_CODE% %PROTOCOL%"}, "e": [1, "%ROUTE_NAME%"]}`, true, false)
	e := fullEntry()
	buf := make([]byte, 0, 4096)
	for name, f := range map[string]*Formatter{"default": text, "time": withTime, "json": js} {
		allocs := testing.AllocsPerRun(100, func() { buf = f.Append(buf[:0], e) })
		if allocs != 0 {
			t.Errorf("%s: Append allocates %.1f times per line, want 0", name, allocs)
		}
	}
}

func BenchmarkAppendDefault(b *testing.B) {
	f, e := Default(), fullEntry()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Append(buf[:0], e)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	f := mustJSON(b, `{"start": "%START_TIME%", "method": "%REQ(:METHOD)%", "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
		"code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%", "duration": "%DURATION%", "upstream": "%UPSTREAM_HOST%",
		"ua": "%REQ(USER-AGENT)%", "id": "%REQ(X-REQUEST-ID)%"}`, true, false)
	e := fullEntry()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Append(buf[:0], e)
	}
}
