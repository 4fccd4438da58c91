package logging

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/outrigger-dev/outrigger/internal/golden"
)

// testPID replaces the process id so that %P is deterministic.
const testPID = 4242

// afternoon and midnight are fixed records: a PM time east of UTC, and an
// AM time at midnight west of UTC with a half-hour offset.
var (
	afternoon = Record{
		Time:     time.Date(2014, time.August, 23, 15, 35, 46, 123456789, time.FixedZone("", 2*3600)),
		Level:    LevelInfo,
		Name:     "upstream",
		Message:  "hello world",
		File:     "pkg/proxy/upstream/host.go",
		Line:     42,
		Function: "upstream.(*Host).Health",
		ThreadID: 1234,
	}
	midnight = Record{
		Time:     time.Date(2021, time.January, 4, 0, 5, 9, 7, time.FixedZone("", -(3*3600+30*60))),
		Level:    LevelWarning,
		Name:     "main",
		Message:  "line one\nsaid \"hi\"\tand\\left\x01",
		File:     "cmd/sidecar/main.go",
		Line:     7,
		Function: "main.main",
		ThreadID: 1,
	}
	noSource = Record{
		Time:    time.Date(2000, time.February, 29, 12, 0, 0, 0, time.UTC),
		Level:   LevelCritical,
		Name:    "",
		Message: "no source",
	}
)

func mustCompile(t testing.TB, pattern string) *Formatter {
	t.Helper()
	f, err := CompileFormat(pattern)
	if err != nil {
		t.Fatalf("CompileFormat(%q): %v", pattern, err)
	}
	f.pid = testPID
	return f
}

// formatCases cover every flag of the specification's table, spdlog's
// extra flags, padding, and unknown flags. Their outputs are in
// testdata/format.golden.
var formatCases = []struct {
	name    string
	pattern string
	rec     *Record
}{
	{"v", "%v", &afternoon},
	{"v_multiline", "%v", &midnight},
	{"underscore", "%_", &midnight},
	{"j", "%j", &midnight},
	{"t", "%t", &afternoon},
	{"P", "%P", &afternoon},
	{"n", "%n", &afternoon},
	{"n_empty", "[%n]", &noSource},
	{"l_info", "%l", &afternoon},
	{"l_warning", "%l", &midnight},
	{"l_critical", "%l", &noSource},
	{"L", "%L%L%L", &afternoon},
	{"a", "%a", &afternoon},
	{"A", "%A", &afternoon},
	{"b", "%b", &afternoon},
	{"B", "%B", &afternoon},
	{"c", "%c", &afternoon},
	{"c_midnight", "%c", &midnight},
	{"C", "%C", &midnight},
	{"Y", "%Y", &afternoon},
	{"D", "%D", &afternoon},
	{"x", "%x", &midnight},
	{"m", "%m", &midnight},
	{"d", "%d", &midnight},
	{"H_pm", "%H", &afternoon},
	{"H_midnight", "%H", &midnight},
	{"I_pm", "%I", &afternoon},
	{"I_midnight", "%I", &midnight},
	{"I_noon", "%I", &noSource},
	{"M", "%M", &midnight},
	{"S", "%S", &midnight},
	{"e", "%e", &afternoon},
	{"f", "%f", &afternoon},
	{"F", "%F", &afternoon},
	{"F_small", "%F", &midnight},
	{"p_pm", "%p", &afternoon},
	{"p_am", "%p", &midnight},
	{"p_noon", "%p", &noSource},
	{"r", "%r", &afternoon},
	{"r_midnight", "%r", &midnight},
	{"R", "%R", &afternoon},
	{"T", "%T", &afternoon},
	{"X", "%X", &midnight},
	{"z_east", "%z", &afternoon},
	{"z_west", "%z", &midnight},
	{"z_utc", "%z", &noSource},
	{"percent", "100%%", &afternoon},
	{"at", "%@", &afternoon},
	{"s", "%s", &afternoon},
	{"g", "%g", &afternoon},
	{"hash", "%#", &afternoon},
	{"bang", "%!", &afternoon},
	{"source_flags_without_source", "<%@|%s|%g|%#|%!>", &noSource},
	{"E", "%E", &afternoon},
	{"colour_range", "%^%l%$", &afternoon},
	{"full", "%+", &afternoon},
	{"full_without_name_or_source", "%+", &noSource},
	{"default_format", DefaultFormat, &afternoon},
	{"legacy_format", LegacyFormat, &midnight},
	{"literal_only", "no flags at all", &afternoon},
	{"unknown_flag", "%Q %k %1y", &afternoon},
	{"unknown_flag_multibyte", "%é", &afternoon},
	{"pad_left", "[%8l]", &afternoon},
	{"pad_right", "[%-8l]", &afternoon},
	{"pad_center", "[%=8l]", &afternoon},
	{"pad_center_odd", "[%=9l]", &afternoon},
	{"pad_shorter_than_text", "[%2n]", &afternoon},
	{"pad_truncate", "[%3!n]", &afternoon},
	{"pad_truncate_short_text", "[%6!l]", &afternoon},
	{"pad_zero_truncate", "[%0!n]", &afternoon},
	{"pad_capped_at_64", "[%999l]", &afternoon},
	{"pad_align_without_width", "[%-l][%=n]", &afternoon},
	{"pad_percent_ignored", "[%5%]", &afternoon},
	{"pad_funcname_bracket", "[%30!]", &afternoon},
	{"pad_funcname_at_end", "[%30!", &afternoon},
	{"pad_date", "[%-6Y|%6m]", &afternoon},
	{"json_line", `{"time":"%Y-%m-%dT%T.%e%z","level":"%l","msg":"%j"}`, &midnight},
}

func TestFormatFlags(t *testing.T) {
	golden := filepath.Join("testdata", "format.golden")
	want := readGolden(t, golden)
	got := make(map[string]string, len(formatCases))
	var order []string
	for _, tc := range formatCases {
		t.Run(tc.name, func(t *testing.T) {
			out := string(mustCompile(t, tc.pattern).Format(nil, tc.rec))
			if !strings.HasSuffix(out, "\n") {
				t.Fatalf("record %q does not end with a newline", out)
			}
			got[tc.name] = out
			order = append(order, tc.name)
			if goldenfile.Update() {
				return
			}
			w, ok := want[tc.name]
			if !ok {
				t.Fatalf("no golden output for %q; run with -update", tc.name)
			}
			if out != w {
				t.Errorf("pattern %q:\n got %q\nwant %q", tc.pattern, out, w)
			}
		})
	}
	if goldenfile.Update() {
		writeGolden(t, golden, order, got)
	}
}

// TestFormatKnownValues pins, independently of the golden file, outputs
// worked out by hand from spdlog's definitions.
func TestFormatKnownValues(t *testing.T) {
	cases := map[string]struct {
		pattern string
		rec     *Record
		want    string
	}{
		"default format": {DefaultFormat, &afternoon,
			"[2014-08-23 15:35:46.123][1234][info][upstream] [pkg/proxy/upstream/host.go:42] hello world\n"},
		"date and time":        {"%c", &afternoon, "Sat Aug 23 15:35:46 2014\n"},
		"12-hour midnight":     {"%r|%I|%p", &midnight, "12:05:09 AM|12|AM\n"},
		"short date":           {"%D", &midnight, "01/04/21\n"},
		"negative half offset": {"%z", &midnight, "-03:30\n"},
		"sub-second":           {"%e|%f|%F", &afternoon, "123|123456|123456789\n"},
		"source":               {"%@|%s|%#|%!", &afternoon, "pkg/proxy/upstream/host.go:42|host.go|42|upstream.(*Host).Health\n"},
		"json escaping":        {"%j", &midnight, `line one\nsaid \"hi\"\tand\\left\u0001` + "\n"},
		"newline escaping":     {"%_", &midnight, "line one\\nsaid \"hi\"\tand\\left\x01\n"},
		"padding":              {"[%6l][%-6l][%=7l][%2!n]", &afternoon, "[  info][info  ][ info  ][up]\n"},
		"unknown flag":         {"%Q", &afternoon, "%Q\n"},
		"process id":           {"%P", &afternoon, "4242\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(mustCompile(t, tc.pattern).Format(nil, tc.rec)); got != tc.want {
				t.Errorf("pattern %q: got %q, want %q", tc.pattern, got, tc.want)
			}
		})
	}
}

func TestFormatElapsed(t *testing.T) {
	cases := map[string]struct {
		pattern string
		gap     time.Duration
		want    string
	}{
		"milliseconds":            {"%o", 1500 * time.Millisecond, "1500"},
		"microseconds":            {"%i", 2 * time.Millisecond, "2000"},
		"nanoseconds":             {"%u", 5 * time.Microsecond, "5000"},
		"seconds":                 {"%O", 90 * time.Second, "90"},
		"clock stepped backwards": {"%u", -time.Second, "0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := mustCompile(t, tc.pattern)
			first, second := afternoon, afternoon
			second.Time = first.Time.Add(tc.gap)
			if got := string(f.Format(nil, &first)); got != "0\n" {
				t.Errorf("first record: got %q, want %q", got, "0\n")
			}
			if got := string(f.Format(nil, &second)); got != tc.want+"\n" {
				t.Errorf("second record: got %q, want %q", got, tc.want+"\n")
			}
		})
	}
}

func TestCompileFormatErrors(t *testing.T) {
	cases := map[string]string{
		"lone percent":             "%",
		"trailing percent":         "[%l] %v %",
		"trailing width":           "%v %12",
		"trailing alignment":       "%v %-",
		"trailing centred width":   "%=3",
		"trailing alignment+width": "%-12",
	}
	for name, pattern := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileFormat(pattern)
			if err == nil {
				t.Fatalf("CompileFormat(%q) succeeded, want an error", pattern)
			}
			if !strings.Contains(err.Error(), strconv.Quote(pattern)) {
				t.Errorf("error %q does not name the pattern", err)
			}
		})
	}
}

func FuzzCompileFormat(f *testing.F) {
	for _, tc := range formatCases {
		f.Add(tc.pattern)
	}
	for _, p := range []string{"%", "%-", "%=", "%12", "%12!", "%-12!", "%%%", "%+%+", "%99999999999999999999l", ""} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		fm, err := CompileFormat(pattern)
		if err != nil {
			return
		}
		for _, rec := range []*Record{&afternoon, &midnight, &noSource, {}} {
			out := fm.Format(nil, rec)
			if len(out) == 0 || out[len(out)-1] != '\n' {
				t.Fatalf("pattern %q: record %q does not end with a newline", pattern, out)
			}
		}
		if !strings.Contains(pattern, "%") {
			if got := string(fm.Format(nil, &afternoon)); got != pattern+"\n" {
				t.Fatalf("literal pattern %q rendered as %q", pattern, got)
			}
		}
	})
}

// readGolden reads "name: quoted output" lines.
func readGolden(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(path)
	if os.IsNotExist(err) && goldenfile.Update() {
		return out
	}
	if err != nil {
		t.Fatalf("read golden file: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, quoted, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			t.Fatalf("golden file %s: malformed line %q", path, sc.Text())
		}
		v, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("golden file %s: line %q: %v", path, sc.Text(), err)
		}
		out[name] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read golden file: %v", err)
	}
	return out
}

func writeGolden(t *testing.T, path string, order []string, got map[string]string) {
	t.Helper()
	var b strings.Builder
	for _, name := range order {
		b.WriteString(name + ": " + strconv.Quote(got[name]) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("write golden file: %v", err)
	}
}

// timeFunc returns a clock stopped at the record's time.
func (r Record) timeFunc() func() time.Time { return func() time.Time { return r.Time } }
