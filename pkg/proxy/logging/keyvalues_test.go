package logging

import (
	"errors"
	"testing"
	"time"
)

type stringer struct{}

func (stringer) String() string { return "from String" }

type panicStringer struct{}

func (panicStringer) String() string { panic("boom") }

type marshaler struct{ secret string }

func (m marshaler) MarshalLog() any { return "redacted" }

type panicMarshaler struct{}

func (panicMarshaler) MarshalLog() any { panic("nope") }

type nilErr struct{ msg string }

func (e *nilErr) Error() string { return e.msg } // panics on a nil receiver

func TestAppendPayload(t *testing.T) {
	var typedNil *nilErr
	cases := map[string]struct {
		msg    string
		err    error
		values []byte
		kvs    []any
		want   string
	}{
		"message only":          {msg: "hello", want: "hello"},
		"simple string":         {msg: "m", kvs: []any{"k", "v"}, want: "m k=v"},
		"string with space":     {msg: "m", kvs: []any{"k", "a b"}, want: `m k="a b"`},
		"string with quote":     {msg: "m", kvs: []any{"k", `a"b`}, want: `m k="a\"b"`},
		"string with equals":    {msg: "m", kvs: []any{"k", "a=b"}, want: `m k="a=b"`},
		"string with newline":   {msg: "m", kvs: []any{"k", "a\nb"}, want: `m k="a\nb"`},
		"empty string":          {msg: "m", kvs: []any{"k", ""}, want: `m k=""`},
		"unicode kept":          {msg: "m", kvs: []any{"k", "café"}, want: "m k=café"},
		"invalid utf8":          {msg: "m", kvs: []any{"k", "\xff"}, want: `m k="\xff"`},
		"numbers and bools":     {msg: "m", kvs: []any{"i", -3, "u", uint8(7), "f", 1.5, "b", true}, want: "m i=-3 u=7 f=1.5 b=true"},
		"all integer widths":    {msg: "m", kvs: []any{"a", int8(1), "b", int16(2), "c", int32(3), "d", int64(4), "e", uint(5), "f", uint16(6), "g", uint32(7), "h", uint64(8), "i", float32(0.25)}, want: "m a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=0.25"},
		"duration":              {msg: "m", kvs: []any{"d", 1500 * time.Millisecond}, want: "m d=1.5s"},
		"stringer":              {msg: "m", kvs: []any{"s", stringer{}}, want: `m s="from String"`},
		"panicking stringer":    {msg: "m", kvs: []any{"s", panicStringer{}}, want: `m s="%!v(PANIC=String method: boom)"`},
		"marshaler":             {msg: "m", kvs: []any{"user", marshaler{"pw"}}, want: "m user=redacted"},
		"panicking marshaler":   {msg: "m", kvs: []any{"x", panicMarshaler{}}, want: `m x="<panic: nope>"`},
		"nil value":             {msg: "m", kvs: []any{"k", nil}, want: "m k=<nil>"},
		"error value":           {msg: "m", kvs: []any{"err", errors.New("bad thing")}, want: `m err="bad thing"`},
		"typed nil error":       {msg: "m", kvs: []any{"err", typedNil}, want: `m err="<nil>"`},
		"odd count":             {msg: "m", kvs: []any{"k", 1, "dangling"}, want: "m k=1 dangling=<no-value>"},
		"non-string key":        {msg: "m", kvs: []any{42, "v"}, want: "m 42=v"},
		"key with space":        {msg: "m", kvs: []any{"a key", "v"}, want: `m "a key"=v`},
		"error argument":        {msg: "failed", err: errors.New("boom"), want: `failed error="boom"`},
		"error before values":   {msg: "m", err: errors.New("e"), values: []byte(" w=1"), kvs: []any{"k", 2}, want: `m error="e" w=1 k=2`},
		"slice falls back":      {msg: "m", kvs: []any{"s", []int{1, 2}}, want: `m s="[1 2]"`},
		"message kept verbatim": {msg: "a \"b\"\n", want: "a \"b\"\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(appendPayload(nil, tc.msg, tc.err, tc.values, tc.kvs)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
