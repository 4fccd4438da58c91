package localratelimit

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/local_ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
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

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func config(maxTokens, perFill uint32, fill time.Duration) *lrlv3.LocalRateLimit {
	return &lrlv3.LocalRateLimit{StatPrefix: "front", TokenBucket: &typev3.TokenBucket{
		MaxTokens: maxTokens, TokensPerFill: wrapperspb.UInt32(perFill), FillInterval: durationpb.New(fill),
	}}
}

// accepts runs n sockets through f and reports which it let go on.
func accepts(t *testing.T, f listenerfilter.Filter, n int) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := range out {
		err := f.OnAccept(nil)
		if err != nil && !errors.Is(err, listenerfilter.ErrRejected) {
			t.Fatalf("OnAccept = %v", err)
		}
		out[i] = err == nil
	}
	return out
}

func TestTokenBucket(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	store := stats.NewStore()
	f, err := Factory{}.Compile(config(2, 1, time.Second), listenerfilter.Context{Stats: store, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if got := accepts(t, f, 3); got[0] != true || got[1] != true || got[2] != false {
		t.Errorf("a full bucket of 2: accepted %v, want the first two", got)
	}
	if got := store.Counter("listener_local_ratelimit.front.rate_limited").Value(); got != 1 {
		t.Errorf("rate_limited = %d, want 1", got)
	}
	c.t = c.t.Add(time.Second) // one token back
	if got := accepts(t, f, 2); got[0] != true || got[1] != false {
		t.Errorf("a second later: accepted %v, want one", got)
	}
}

func TestRuntimeEnabled(t *testing.T) {
	cfg := config(1, 1, time.Hour)
	cfg.RuntimeEnabled = &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(true), RuntimeKey: "lrl.on"}
	store := stats.NewStore()
	f, err := Factory{}.Compile(cfg, listenerfilter.Context{Stats: store, Runtime: flags{"lrl.on": false}})
	if err != nil {
		t.Fatal(err)
	}
	if got := accepts(t, f, 3); got[0] != true || got[1] != true || got[2] != true {
		t.Errorf("disabled by the runtime: accepted %v, want all", got)
	}
	if got := store.Counter("listener_local_ratelimit.front.rate_limited").Value(); got != 0 {
		t.Errorf("rate_limited = %d while disabled, want 0", got)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		cfg  *lrlv3.LocalRateLimit
		want string
	}{
		"no stat prefix":   {&lrlv3.LocalRateLimit{TokenBucket: config(1, 1, time.Second).TokenBucket}, "stat_prefix: required"},
		"no bucket":        {&lrlv3.LocalRateLimit{StatPrefix: "p"}, "token_bucket: required"},
		"fast fill":        {config(1, 1, 10*time.Millisecond), "token_bucket.fill_interval: local rate limit token bucket fill timer must be >= 50ms"},
		"no tokens":        {config(0, 1, time.Second), "token_bucket.max_tokens: must be above 0"},
		"no fill interval": {&lrlv3.LocalRateLimit{StatPrefix: "p", TokenBucket: &typev3.TokenBucket{MaxTokens: 1}}, "token_bucket.fill_interval"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, listenerfilter.Context{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
