package accesslog

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzParse feeds arbitrary format strings to the parser. A format must
// either be refused with an error or render without panicking; a format
// without '%' renders as itself; a dictionary always renders valid JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		DefaultFormat, "%START_TIME(%Y/%m/%dT%H:%M:%S%z %s %E*S %3f)%", "%REQ(A?B):3%", "%%", "%",
		"%RESP(:STATUS)%", "%START_TIME(%E9S%Ez)%", "100%% %PROTOCOL", "%REQ(X-\xff)%", "%ROUTE_NAME:99999999999999999999%",
		"%DYNAMIC_METADATA(ns:k)%", "%METADATA(CLUSTER:ns):2%", "%UPSTREAM_METADATA(ns)%", "%METADATA(UPSTREAM_HOST:ns:list)%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, format string) {
		text, err := Text(format, false)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		line := text.Append(nil, fullEntry())
		_ = text.Append(line[:0], &Entry{})
		if !strings.Contains(format, "%") && string(line) != format {
			t.Fatalf("literal format %q rendered as %q", format, line)
		}
		js, err := compileJSON(&structpb.Struct{Fields: map[string]*structpb.Value{
			format: structpb.NewStringValue(format),
			"n":    structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(format)}}),
		}}, len(format)%2 == 0, len(format)%3 == 0, "json_format", nil)
		if err != nil {
			t.Fatalf("a format Text accepts was refused in a dictionary: %v", err)
		}
		for _, e := range []*Entry{fullEntry(), {}} {
			if out := js.Append(nil, e); !json.Valid(out) {
				t.Fatalf("invalid JSON for %q: %s", format, out)
			}
		}
	})
}
