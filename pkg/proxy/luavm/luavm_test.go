package luavm

import (
	"strings"
	"testing"
	"time"

	glua "github.com/yuin/gopher-lua"
)

func TestLoad(t *testing.T) {
	tests := map[string]struct {
		code, want string
	}{
		"syntax error":  {code: "function f(", want: "script does not compile"},
		"error at load": {code: `error("no")`, want: "script load error: chunk:1: no"},
		"loop at load":  {code: "while true do end", want: "script did not finish loading within 20ms"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			proto, err := Compile(tc.code, "chunk")
			if err == nil {
				_, err = Load(proto, "", 20*time.Millisecond)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// load compiles and loads code, closing the state when the test ends.
func load(t *testing.T, code string) *State {
	t.Helper()
	proto, err := Compile(code, "chunk")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(proto, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSandbox(t *testing.T) {
	s := load(t, `
function f()
  return tostring(io) .. " " .. tostring(os.exit) .. " " .. tostring(dofile) .. " " .. tostring(debug) .. " " .. type(os.time())
end
function big() return string.rep("x", 17 * 1024 * 1024) end`)
	if _, err := s.Call(s.Function("f"), time.Second, 1); err != nil {
		t.Fatal(err)
	}
	if got := s.L.Get(-1).String(); got != "nil nil nil nil number" {
		t.Errorf("f() = %q", got)
	}
	s.L.Pop(1)
	if _, err := s.Call(s.Function("big"), time.Second, 1); err == nil || !strings.Contains(ErrorText(err), "string.rep: the result would be over") {
		t.Errorf("string.rep of 17 MiB: %v", err)
	}
	if s.Function("missing") != nil {
		t.Error("a function the script does not define")
	}
}

func TestCallBudget(t *testing.T) {
	s := load(t, `function spin() while true do end end`)
	expired, err := s.Call(s.Function("spin"), 20*time.Millisecond, 0)
	if !expired || err == nil {
		t.Errorf("expired %v, err %v: the loop was not stopped", expired, err)
	}
}

func TestPool(t *testing.T) {
	opened, dropped := 0, 0
	p := NewPool(func() (*glua.LState, error) { opened++; return glua.NewState(), nil }, func(L *glua.LState) { dropped++; L.Close() })
	a, _ := p.Get()
	b, _ := p.Get()
	if opened != 2 || p.Idle() != 0 {
		t.Fatalf("opened %d, idle %d", opened, p.Idle())
	}
	p.Put(a)
	if c, _ := p.Get(); c != a || opened != 2 {
		t.Error("an idle state was not reused")
	}
	// A full pool closes what it cannot keep.
	for range cap(p.free) {
		s, _ := p.Get()
		p.Put(s)
	}
	for range cap(p.free) + 1 {
		p.Put(glua.NewState())
	}
	if dropped == 0 || p.Idle() != cap(p.free) {
		t.Errorf("dropped %d, idle %d of %d", dropped, p.Idle(), cap(p.free))
	}
	b.Close()
}
