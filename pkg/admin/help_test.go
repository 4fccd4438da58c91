package admin

import (
	"net/http"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	ta := newTestAdmin(t)
	rec := serve(t, ta.Handler(), request{target: "/help"})
	checkResponseGolden(t, "help", rec)
}

func TestHelpText(t *testing.T) {
	ok := func(*Response, *Request) {}
	routes := []Route{
		{Path: "/a", Help: "first", Handler: ok},
		{Path: "/b", Help: "second", Mutates: true, Handler: ok, Params: []Param{
			{Name: "flag", Help: "a flag", Kind: ParamFlag},
			{Name: "mode", Help: "a mode", Kind: ParamEnum, Values: []string{"x", "y"}},
		}},
	}
	want := "admin commands are:\n" +
		"  /a: first\n" +
		"  /b (POST): second\n" +
		"      flag: a flag\n" +
		"      mode: a mode; One of (x, y)\n"
	if got := helpText(routes); got != want {
		t.Errorf("helpText:\n got %q\nwant %q", got, want)
	}
}

func TestHelpAnswersAnyMethod(t *testing.T) {
	ta := newTestAdmin(t)
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
		rec := serve(t, ta.Handler(), request{method: m, target: "/help"})
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "admin commands are:\n") {
			t.Errorf("%s /help = %d %.40q", m, rec.Code, rec.Body.String())
		}
	}
}
