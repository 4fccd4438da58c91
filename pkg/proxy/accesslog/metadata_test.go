package accesslog

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	tracingtagsv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// metadataOf builds Metadata from namespaces of plain Go values.
func metadataOf(t *testing.T, namespaces map[string]map[string]any) *corev3.Metadata {
	t.Helper()
	md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	for ns, fields := range namespaces {
		st, err := structpb.NewStruct(fields)
		if err != nil {
			t.Fatal(err)
		}
		md.FilterMetadata[ns] = st
	}
	return md
}

// metadataEntry has dynamic, cluster and host metadata of every kind of
// value.
func metadataEntry(t *testing.T) *Entry {
	e := fullEntry()
	e.DynamicMetadata = metadataOf(t, map[string]map[string]any{
		"com.test": {"str": "hello", "num": 5.0, "big": 123456789.0, "million": 1e6, "frac": 0.25,
			"yes": true, "null": nil, "list": []any{"a", 1.0}, "nested": map[string]any{"b": "x", "a": 2.0}},
	})
	e.ClusterMetadata = metadataOf(t, map[string]map[string]any{"envoy.lb": {"version": "v2"}})
	e.UpstreamHostMetadata = metadataOf(t, map[string]map[string]any{"envoy.lb": {"zone": "z1", "quote": `a"b`}})
	return e
}

func TestMetadataOperators(t *testing.T) {
	tests := map[string]struct {
		format string
		want   string
	}{
		"string as is":        {format: "%DYNAMIC_METADATA(com.test:str)%", want: "hello"},
		"integer number":      {format: "%DYNAMIC_METADATA(com.test:num)%", want: "5"},
		"large number":        {format: "%DYNAMIC_METADATA(com.test:big)%", want: "123456789"},
		"exponent is shorter": {format: "%DYNAMIC_METADATA(com.test:million)%", want: "1e+06"},
		"fraction":            {format: "%DYNAMIC_METADATA(com.test:frac)%", want: "0.25"},
		"bool":                {format: "%DYNAMIC_METADATA(com.test:yes)%", want: "true"},
		"null is missing":     {format: "%DYNAMIC_METADATA(com.test:null)%", want: "-"},
		"list as JSON":        {format: "%DYNAMIC_METADATA(com.test:list)%", want: `["a",1]`},
		"struct sorted":       {format: "%DYNAMIC_METADATA(com.test:nested)%", want: `{"a":2,"b":"x"}`},
		"nested key":          {format: "%DYNAMIC_METADATA(com.test:nested:b)%", want: "x"},
		"key below a string":  {format: "%DYNAMIC_METADATA(com.test:str:x)%", want: "-"},
		"missing key":         {format: "%DYNAMIC_METADATA(com.test:nope)%", want: "-"},
		"missing namespace":   {format: "%DYNAMIC_METADATA(other)%", want: "-"},
		"whole namespace": {format: "%DYNAMIC_METADATA(com.test)%",
			want: `{"big":123456789,"frac":0.25,"list":["a",1],"million":1e+06,"nested":{"a":2,"b":"x"},"null":null,"num":5,"str":"hello","yes":true}`},
		"cluster":                {format: "%CLUSTER_METADATA(envoy.lb:version)%", want: "v2"},
		"upstream host":          {format: "%UPSTREAM_METADATA(envoy.lb:zone)%", want: "z1"},
		"METADATA dynamic":       {format: "%METADATA(DYNAMIC:com.test:str)%", want: "hello"},
		"METADATA cluster":       {format: "%METADATA(CLUSTER:envoy.lb:version)%", want: "v2"},
		"METADATA host":          {format: "%METADATA(UPSTREAM_HOST:envoy.lb)%", want: `{"quote":"a\"b","zone":"z1"}`},
		"METADATA truncated":     {format: "%METADATA(DYNAMIC:com.test:nested):6%", want: `{"a":2`},
		"METADATA no keys":       {format: "%METADATA(DYNAMIC)%", want: "-"},
		"in a longer format":     {format: "[%CLUSTER_METADATA(envoy.lb:version)%|%UPSTREAM_METADATA(x:y)%]", want: "[v2|-]"},
		"type is case-sensitive": {format: "%METADATA(DYNAMIC:com.test:STR)%", want: "-"},
	}
	e := metadataEntry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := Text(tc.format, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, e)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			// Nothing chosen yet: every metadata operator is missing.
			if got := string(f.AppendValue(nil, &Entry{})); strings.Contains(got, "hello") || strings.Contains(got, "v2") {
				t.Errorf("an empty entry rendered %q", got)
			}
		})
	}
}

func TestMetadataTypedJSON(t *testing.T) {
	f := mustJSON(t, `{"s": "%DYNAMIC_METADATA(com.test:str)%", "n": "%DYNAMIC_METADATA(com.test:num)%",
		"st": "%METADATA(DYNAMIC:com.test:nested):3%", "m": "%CLUSTER_METADATA(none:x)%",
		"t": "v=%DYNAMIC_METADATA(com.test:nested)%"}`, true, false)
	want := `{"m":null,"n":5,"s":"hello","st":{"a":2,"b":"x"},"t":"v={\"a\":2,\"b\":\"x\"}"}` + "\n"
	if got := string(f.Append(nil, metadataEntry(t))); got != want {
		t.Errorf("typed JSON:\n got %s\nwant %s", got, want)
	}
	omit := mustJSON(t, `{"m": "%CLUSTER_METADATA(none:x)%", "s": "%DYNAMIC_METADATA(com.test:str)%"}`, true, true)
	if got, want := string(omit.Append(nil, metadataEntry(t))), `{"s":"hello"}`+"\n"; got != want {
		t.Errorf("omit_empty_values: got %s, want %s", got, want)
	}
}

func TestMetadataOperatorErrors(t *testing.T) {
	tests := map[string]struct {
		format string
		want   string
	}{
		"no parameters":     {format: "%DYNAMIC_METADATA%", want: "DYNAMIC_METADATA requires parameters"},
		"empty parameters":  {format: "%CLUSTER_METADATA()%", want: "CLUSTER_METADATA requires parameters"},
		"no length":         {format: "%UPSTREAM_METADATA(a:b):3%", want: "UPSTREAM_METADATA does not allow length to be specified."},
		"unknown type":      {format: "%METADATA(FOO:a)%", want: "FOO is not supported type of metadata"},
		"req without query": {format: "%REQ_WITHOUT_QUERY(:PATH)%", want: "command operator %REQ_WITHOUT_QUERY% needs the formatter extension envoy.formatter.req_without_query"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Text(tc.format, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestAppendJSONNumber(t *testing.T) {
	tests := map[float64]string{
		0: "0", 1: "1", -3: "-3", 100: "100", 1000: "1000", 10000: "10000", 100000: "1e+05",
		0.5: "0.5", 0.0001: "1e-04", 0.001: "0.001", 1.5e300: "1.5e+300", 12345.678: "12345.678",
	}
	for f, want := range tests {
		if got := string(appendJSONNumber(nil, f)); got != want {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

func TestTranslateLegacyHeaderFormat(t *testing.T) {
	tests := map[string]string{
		`%UPSTREAM_METADATA(["envoy.lb", "zone"])%`:                 `%UPSTREAM_METADATA(envoy.lb:zone)%`,
		`a %DYNAMIC_METADATA([ "ns" ])% b %UPSTREAM_HOST%`:          `a %DYNAMIC_METADATA(ns)% b %UPSTREAM_HOST%`,
		`%UPSTREAM_METADATA(["a"])%-%UPSTREAM_METADATA(["b","c"])%`: `%UPSTREAM_METADATA(a)%-%UPSTREAM_METADATA(b:c)%`,
		`%UPSTREAM_METADATA(a:b)%`:                                  `%UPSTREAM_METADATA(a:b)%`,
		`%UPSTREAM_METADATA([1])%`:                                  `%UPSTREAM_METADATA([1])%`,
		`%CLUSTER_METADATA(["a"])%`:                                 `%CLUSTER_METADATA(["a"])%`,
	}
	for in, want := range tests {
		if got := TranslateLegacyHeaderFormat(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func TestMetadataTag(t *testing.T) {
	tag := func(kind *metadatav3.MetadataKind, def, ns string, path ...string) *MetadataTag {
		key := &metadatav3.MetadataKey{Key: ns}
		for _, p := range path {
			key.Path = append(key.Path, &metadatav3.MetadataKey_PathSegment{Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: p}})
		}
		mt, err := CompileMetadataTag(&tracingtagsv3.CustomTag_Metadata{Kind: kind, MetadataKey: key, DefaultValue: def})
		if err != nil {
			t.Fatal(err)
		}
		return mt
	}
	request := &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Request_{Request: &metadatav3.MetadataKind_Request{}}}
	cluster := &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Cluster_{Cluster: &metadatav3.MetadataKind_Cluster{}}}
	host := &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Host_{Host: &metadatav3.MetadataKind_Host{}}}
	tests := map[string]struct {
		tag    *MetadataTag
		want   string
		wantOK bool
	}{
		"string":              {tag: tag(request, "", "com.test", "str"), want: "hello", wantOK: true},
		"number as %.6g":      {tag: tag(request, "", "com.test", "big"), want: "1.23457e+08", wantOK: true},
		"bool":                {tag: tag(request, "", "com.test", "yes"), want: "true", wantOK: true},
		"struct as JSON":      {tag: tag(request, "", "com.test", "nested"), want: `{"a":2,"b":"x"}`, wantOK: true},
		"list as JSON":        {tag: tag(request, "", "com.test", "list"), want: `["a",1]`, wantOK: true},
		"null takes default":  {tag: tag(request, "dflt", "com.test", "null"), want: "dflt", wantOK: true},
		"missing, no default": {tag: tag(request, "", "com.test", "nope")},
		"cluster":             {tag: tag(cluster, "", "envoy.lb", "version"), want: "v2", wantOK: true},
		"host":                {tag: tag(host, "", "envoy.lb", "zone"), want: "z1", wantOK: true},
	}
	e := metadataEntry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := tc.tag.AppendValue(nil, e)
			if string(got) != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	// A cluster tag reads the chosen host's cluster: none before a host.
	e.UpstreamHost = ""
	if got, ok := tag(cluster, "none", "envoy.lb", "version").AppendValue(nil, e); string(got) != "none" || !ok {
		t.Errorf("cluster tag without a host: got %q, %v", got, ok)
	}
}
