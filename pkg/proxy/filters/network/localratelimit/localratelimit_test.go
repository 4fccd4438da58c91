package localratelimit

import (
	"net"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/local_ratelimit/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// flags is a runtime of fixed boolean values.
type flags map[string]bool

func (f flags) Bool(key string, def bool) bool {
	if v, ok := f[key]; ok {
		return v
	}
	return def
}

// conn is a connection the filter looks at (it reads nothing of it).
type conn struct{ net.Conn }

func (conn) OnClose(func()) {}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func bucket(maxTokens, perFill uint32, fill time.Duration) *lrlv3.LocalRateLimit {
	return &lrlv3.LocalRateLimit{StatPrefix: "front", TokenBucket: &typev3.TokenBucket{
		MaxTokens: maxTokens, TokensPerFill: wrapperspb.UInt32(perFill), FillInterval: durationpb.New(fill),
	}}
}

func compile(t *testing.T, cfg *lrlv3.LocalRateLimit, ctx netfilter.Context) *Filter {
	t.Helper()
	if ctx.Stats == nil {
		ctx.Stats = stats.NewStore()
	}
	f, err := Factory{}.Compile(cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f.(*Filter)
}

// admits runs n connections through f and reports which it let go on.
func admits(f *Filter, n int) []bool {
	var out []bool
	for range n {
		out = append(out, f.OnNewConnection(conn{}) == nil)
	}
	return out
}

func TestTokenBucket(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	store := stats.NewStore()
	f := compile(t, bucket(2, 1, time.Second), netfilter.Context{Stats: store, Now: clk.now})
	if got := admits(f, 3); got[0] != true || got[1] != true || got[2] != false {
		t.Fatalf("a bucket of 2 admitted %v, want the first two", got)
	}
	r := f.OnNewConnection(conn{})
	if r == nil || r.Flags != accesslog.UpstreamRetryLimitExceeded || r.Reason != "local_ratelimit_close_over_limit" {
		t.Errorf("refusal %+v, want URX and Envoy's close reason", r)
	}
	if got := store.Counter("local_rate_limit.front.rate_limited").Value(); got != 2 {
		t.Errorf("rate_limited %d, want 2", got)
	}
	// One token a second comes back, up to the bucket's size.
	clk.t = clk.t.Add(time.Second)
	if got := admits(f, 2); got[0] != true || got[1] != false {
		t.Errorf("after a second, admitted %v, want one", got)
	}
	clk.t = clk.t.Add(time.Hour)
	if got := admits(f, 3); got[0] != true || got[1] != true || got[2] != false {
		t.Errorf("after an hour, admitted %v, want two: the bucket's size", got)
	}
}

func TestRuntimeEnabled(t *testing.T) {
	cfg := bucket(1, 1, time.Hour)
	cfg.RuntimeEnabled = &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(false), RuntimeKey: "rl.on"}
	rt := flags{}
	f := compile(t, cfg, netfilter.Context{Runtime: rt})
	if got := admits(f, 3); got[2] != true {
		t.Errorf("disabled by default, admitted %v, want all", got)
	}
	rt["rl.on"] = true
	if got := admits(f, 2); got[0] != true || got[1] != false {
		t.Errorf("enabled at run time, admitted %v, want one: no token was taken while disabled", got)
	}
}

func TestShareKey(t *testing.T) {
	shared := netfilter.NewShared()
	ctx := netfilter.Context{Shared: shared}
	withKey := func(cfg *lrlv3.LocalRateLimit, key string) *lrlv3.LocalRateLimit { cfg.ShareKey = key; return cfg }

	a := compile(t, withKey(bucket(2, 1, time.Hour), "k"), ctx)
	b := compile(t, withKey(bucket(2, 1, time.Hour), "k"), ctx)
	other := compile(t, withKey(bucket(2, 1, time.Hour), "other"), ctx)
	differentBucket := compile(t, withKey(bucket(3, 1, time.Hour), "k"), ctx)
	unshared := compile(t, bucket(2, 1, time.Hour), ctx)
	if a.limit != b.limit {
		t.Fatal("two filters of one share_key and token_bucket have their own buckets")
	}
	for name, f := range map[string]*Filter{"another share_key": other, "another token_bucket": differentBucket, "no share_key": unshared} {
		if f.limit == a.limit {
			t.Errorf("%s shares the bucket", name)
		}
	}
	if got := append(admits(a, 1), admits(b, 2)...); got[0] != true || got[1] != true || got[2] != false {
		t.Errorf("two filters of one bucket of 2 admitted %v, want two in all", got)
	}
	if got := admits(other, 1); got[0] != true {
		t.Error("another share_key's bucket is empty too")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		cfg  *lrlv3.LocalRateLimit
		want string
	}{
		"no stat_prefix":   {cfg: &lrlv3.LocalRateLimit{TokenBucket: bucket(1, 1, time.Second).TokenBucket}, want: "stat_prefix: required"},
		"no token_bucket":  {cfg: &lrlv3.LocalRateLimit{StatPrefix: "p"}, want: "token_bucket: required"},
		"short fill":       {cfg: bucket(1, 1, 10*time.Millisecond), want: "token_bucket.fill_interval: local rate limit token bucket fill timer must be >= 50ms"},
		"no tokens":        {cfg: bucket(0, 1, time.Second), want: "token_bucket.max_tokens: must be above 0"},
		"no tokens a fill": {cfg: bucket(1, 0, time.Second), want: "token_bucket.tokens_per_fill: must be above 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, netfilter.Context{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&tcpproxyv3.TcpProxy{}, netfilter.Context{Stats: stats.NewStore()}); err == nil {
		t.Error("another filter's configuration was accepted")
	}
}
