package cache

import (
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cache/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// mapStore is a Store without bound, for the filter's tests.
type mapStore struct {
	mu sync.Mutex
	m  map[string]*Entry
}

func (s *mapStore) Get(key string) (*Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	return e, ok
}

func (s *mapStore) Put(key string, e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = e
}

func (s *mapStore) Limit() int { return 1 << 20 }

// mapStoreFactory hands out one mapStore; its config type is Empty.
type mapStoreFactory struct{ store *mapStore }

func (f mapStoreFactory) NewStore(proto.Message, httpfilter.Context) (Store, error) {
	return f.store, nil
}

// compile builds the filter of cfg (typed_config set to the test store)
// with a clock the test moves.
func compile(t *testing.T, cfg *cachev3.CacheConfig) (*filterConfig, *mapStore, *time.Time) {
	t.Helper()
	store := &mapStore{m: map[string]*Entry{}}
	reg, err := extension.New(extension.Of("test.store", StorageCategory, &emptypb.Empty{}, mapStoreFactory{store}))
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := anypb.New(&emptypb.Empty{})
	cfg.TypedConfig = tc
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := Factory{}.Compile(cfg, httpfilter.Context{Extensions: reg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*filterConfig), store, &now
}

// exchange runs one request through the filter: when it goes upstream,
// upstream answers (status, headers, body). It returns the stream.
func exchange(c *filterConfig, method, path string, reqHeaders []string, status int, respHeaders []string, body string) *httpfiltertest.Stream {
	s := httpfiltertest.NewStream(method, path, reqHeaders...)
	f := c.NewFilter().(*filter)
	if f.DecodeHeaders(s) == httpfilter.Stop {
		f.EncodeHeaders(s)
		return s
	}
	s.Status = status
	s.RespHeaders = httpfiltertest.NewHeaders(respHeaders...)
	s.RespHasBody, s.RespBodyLen = body != "" && method != "HEAD", int64(len(body))
	f.EncodeHeaders(s)
	if s.RespHasBody {
		_, _, _ = s.EncodeBody(nil, []byte(body[:len(body)/2]), []byte(body[len(body)/2:]))
	}
	return s
}

func TestHitMissAndValidation(t *testing.T) {
	c, _, now := compile(t, &cachev3.CacheConfig{})
	date := now.Format(time.RFC1123)
	date = strings.Replace(date, "UTC", "GMT", 1)
	resp := []string{"date", date, "cache-control", "max-age=10", "etag", `"1"`, "x-a", "a"}

	s := exchange(c, "GET", "/r", nil, 200, resp, "stored")
	if s.Reply != nil {
		t.Fatal("a miss was answered locally")
	}
	*now = now.Add(4 * time.Second)
	s = exchange(c, "GET", "/r", nil, 0, nil, "")
	if s.Reply == nil || s.Reply.Flags != accesslog.ResponseFromCacheFilter || s.Reply.Details != detailsFromCache {
		t.Fatalf("no hit: %+v", s.Reply)
	}
	if s.Replaced == nil || s.Replaced.Status != 200 || s.Replaced.Body != "stored" {
		t.Fatalf("served %+v", s.Replaced)
	}
	if age, _ := s.RespHeaders.Get("age"); age != "4" {
		t.Errorf("age %q", age)
	}
	if v, _ := s.RespHeaders.Get("x-a"); v != "a" {
		t.Errorf("x-a %q", v)
	}
	if _, has := s.RespHeaders.Get("content-type"); has {
		t.Error("the replacement's content-type stayed")
	}

	// A HEAD is answered from the GET's entry.
	s = exchange(c, "HEAD", "/r", nil, 0, nil, "")
	if s.Reply == nil {
		t.Error("HEAD missed")
	}

	// Once stale, the request goes upstream with the validators.
	*now = now.Add(10 * time.Second)
	s = httpfiltertest.NewStream("GET", "/r")
	f := c.NewFilter().(*filter)
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Fatal("a stale entry was served")
	}
	if v, _ := s.ReqHeaders.Get("if-none-match"); v != `"1"` {
		t.Errorf("if-none-match %q", v)
	}
	if v, _ := s.ReqHeaders.Get("if-modified-since"); v != date {
		t.Errorf("if-modified-since %q, want the Date %q", v, date)
	}
	s.Status = 304
	s.RespHeaders = httpfiltertest.NewHeaders("etag", `"1"`, "x-a", "new", "cache-control", "max-age=10", "date", strings.Replace(now.Format(time.RFC1123), "UTC", "GMT", 1))
	f.EncodeHeaders(s)
	if s.Replaced == nil || s.Replaced.Status != 200 || s.Replaced.Body != "stored" {
		t.Fatalf("validated %+v", s.Replaced)
	}
	if v, _ := s.RespHeaders.Get("x-a"); v != "new" {
		t.Errorf("the 304's header did not win: %q", v)
	}
	if _, has := s.RespHeaders.Get("age"); has {
		t.Error("a validated response has an Age")
	}
	if s.Flags&accesslog.ResponseFromCacheFilter == 0 {
		t.Error("no RFCF flag")
	}

	// The entry was freshened by the 304.
	*now = now.Add(2 * time.Second)
	s = exchange(c, "GET", "/r", nil, 0, nil, "")
	if s.Reply == nil {
		t.Fatal("the freshened entry missed")
	}
	if v, _ := s.RespHeaders.Get("x-a"); v != "new" {
		t.Errorf("x-a %q", v)
	}
}

func TestNotStored(t *testing.T) {
	c, store, _ := compile(t, &cachev3.CacheConfig{MaxBodyBytes: 5})
	for _, tc := range []struct {
		name   string
		method string
		req    []string
		status int
		resp   []string
		body   string
	}{
		{"no-store", "GET", nil, 200, []string{"cache-control", "no-store, max-age=9"}, "b"},
		{"request no-store", "GET", []string{"cache-control", "no-store"}, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"authorization", "GET", []string{"authorization", "x"}, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"conditional", "GET", []string{"if-modified-since", "x"}, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"range", "GET", []string{"range", "bytes=0-1"}, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"HEAD", "HEAD", nil, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"POST", "POST", nil, 200, []string{"cache-control", "max-age=9"}, "b"},
		{"no freshness", "GET", nil, 200, nil, "b"},
		{"status", "GET", nil, 500, []string{"cache-control", "max-age=9"}, "b"},
		{"vary not allowed", "GET", nil, 200, []string{"cache-control", "max-age=9", "vary", "accept"}, "b"},
		{"vary star", "GET", nil, 200, []string{"cache-control", "max-age=9", "vary", "*"}, "b"},
		{"past max_body_bytes", "GET", nil, 200, []string{"cache-control", "max-age=9"}, "123456"},
		{"trailers", "GET", nil, 200, []string{"cache-control", "max-age=9"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(store.m)
			if tc.name != "trailers" {
				exchange(c, tc.method, "/x", tc.req, tc.status, tc.resp, tc.body)
			} else {
				s := httpfiltertest.NewStream("GET", "/x")
				f := c.NewFilter().(*filter)
				f.DecodeHeaders(s)
				s.Status, s.RespHeaders = 200, httpfiltertest.NewHeaders("cache-control", "max-age=9")
				s.RespHasBody, s.RespBodyLen = true, 2
				f.EncodeHeaders(s)
				_, _, _ = s.EncodeBody(map[string][]string{"grpc-status": {"0"}}, []byte("ab"))
			}
			if len(store.m) != 0 {
				t.Errorf("stored %v", store.m)
			}
		})
	}
	exchange(c, "GET", "/x", nil, 200, []string{"cache-control", "max-age=9"}, "12345")
	if len(store.m) != 1 {
		t.Error("a body of max_body_bytes was not stored")
	}
}

func TestVaryAndKey(t *testing.T) {
	c, store, _ := compile(t, &cachev3.CacheConfig{
		AllowedVaryHeaders: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "accept"}}},
		KeyCreatorParams: &cachev3.CacheConfig_KeyCreatorParams{
			ExcludeHost: true,
			QueryParametersIncluded: []*routev3.QueryParameterMatcher{
				{Name: "a"}, {Name: "b", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "1"}}}},
			},
			QueryParametersExcluded: []*routev3.QueryParameterMatcher{{Name: "a", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "skip"}}}}},
		},
	})
	resp := []string{"cache-control", "max-age=60", "vary", "Accept-Language, accept"}
	exchange(c, "GET", "/p?a=1&z=2", []string{"accept-language", "en"}, 200, resp, "en")
	exchange(c, "GET", "/p?a=1", []string{"accept-language", "fr"}, 200, resp, "fr")
	if len(store.m) != 3 {
		t.Fatalf("want a marker and two variants, got %d entries", len(store.m))
	}
	for _, tc := range []struct {
		path, lang, host, want string
	}{
		{"/p?a=1", "en", "host", "en"},
		{"/p?a=1&z=9", "fr", "host", "fr"},
		{"/p?z=1&a=1", "en", "other", "en"},
		{"/p?a=1&b=2", "en", "host", "en"},
		{"/p?a=1&b=1", "en", "host", ""},
		{"/p?a=1", "de", "host", ""},
		{"/p?a=2", "en", "host", ""},
	} {
		s := httpfiltertest.NewStream("GET", tc.path, "accept-language", tc.lang)
		s.Req.Host = tc.host
		f := c.NewFilter().(*filter)
		st := f.DecodeHeaders(s)
		got := ""
		if st == httpfilter.Stop {
			f.EncodeHeaders(s)
			got = s.Replaced.Body
		}
		if got != tc.want {
			t.Errorf("%s %s %s: served %q, want %q", tc.path, tc.lang, tc.host, got, tc.want)
		}
	}
	if got := c.keyPath("/p?a=skip&a=1&b=1&c=3"); got != "/p?a=1&b=1" {
		t.Errorf("keyPath %q", got)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := (Factory{}).Compile(&cachev3.CacheConfig{}, httpfilter.Context{}); err == nil || !strings.HasPrefix(err.Error(), "typed_config: required") {
		t.Errorf("error %v", err)
	}
	c, err := Factory{}.Compile(&cachev3.CacheConfig{Disabled: wrapBool(true)}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.NewFilter().(noop); !ok {
		t.Error("a disabled filter is not a no-op")
	}
	tc, _ := anypb.New(&emptypb.Empty{})
	_, err = Factory{}.Compile(&cachev3.CacheConfig{TypedConfig: tc, KeyCreatorParams: &cachev3.CacheConfig_KeyCreatorParams{
		QueryParametersExcluded: []*routev3.QueryParameterMatcher{{}},
	}}, httpfilter.Context{Extensions: &extension.Registry{}})
	if err == nil || !strings.Contains(err.Error(), "key_creator_params.query_parameters_excluded[0].name: ") {
		t.Errorf("error %v", err)
	}
}

func wrapBool(v bool) *wrapperspb.BoolValue { return wrapperspb.Bool(v) }
