package admin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestHomePage(t *testing.T) {
	ta := newTestAdmin(t)
	rec := serve(t, ta.Handler(), request{target: "/"})
	checkResponseGolden(t, "home", rec)
}

// TestHomePageStructure checks the page's promises for every route, so that
// routes added later keep them: mutations are POST forms and never links,
// read-only endpoints are links or GET forms, every parameter has an input
// bound to its form, and nothing is loaded from elsewhere.
func TestHomePageStructure(t *testing.T) {
	ta := newTestAdmin(t)
	page := serve(t, ta.Handler(), request{target: "/"}).Body.String()

	for _, banned := range []string{"<script", "http://", "https://", "src=", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q: it must be self-contained", banned)
		}
	}
	if !strings.Contains(page, "<title>Outrigger Admin</title>") {
		t.Errorf("page lacks its title")
	}
	if strings.Contains(page, "action='' ") || strings.Contains(page, "href=''") {
		t.Errorf("page links to itself")
	}
	for _, r := range ta.Routes() {
		if r.Path == "/" {
			continue
		}
		link := strings.TrimPrefix(r.Path, "/")
		anchor := fmt.Sprintf("<a href='%s'>", link)
		getForm := fmt.Sprintf("<form action='%s' method='get' id='%s'", link, link)
		postForm := fmt.Sprintf("<form action='%s' method='post' id='%s'", link, link)
		switch {
		case r.Mutates:
			if !strings.Contains(page, postForm) || strings.Contains(page, anchor) {
				t.Errorf("%s mutates: want a POST form and no link", r.Path)
			}
		case len(r.Params) > 0:
			if !strings.Contains(page, getForm) {
				t.Errorf("%s has parameters: want a GET form", r.Path)
			}
		default:
			if !strings.Contains(page, anchor) {
				t.Errorf("%s: want a plain link", r.Path)
			}
		}
		for _, p := range r.Params {
			id := fmt.Sprintf(`param-\d+-%s-%s`, regexp.QuoteMeta(strings.ReplaceAll(link, "/", "-")), regexp.QuoteMeta(p.Name))
			input := regexp.MustCompile(fmt.Sprintf(`name='%s' id='(%s)' form='%s'>`, regexp.QuoteMeta(p.Name), id, regexp.QuoteMeta(link)))
			m := input.FindStringSubmatch(page)
			if m == nil {
				t.Errorf("%s: parameter %s lacks an input bound to the form", r.Path, p.Name)
				continue
			}
			if label := fmt.Sprintf("<label for='%s'>", m[1]); !strings.Contains(page, label) {
				t.Errorf("%s: parameter %s lacks its label", r.Path, p.Name)
			}
		}
	}
}

// TestHomePageEscapes checks that help texts, names and enum values are
// HTML-escaped (Envoy's EscapeHelpTextWithPunctuation).
func TestHomePageEscapes(t *testing.T) {
	route := Route{
		Path: "/x<y>",
		Help: "jupiter>saturn>mars & 'moons'",
		Params: []Param{
			{Name: "p'q", Help: "<b>bold</b>", Kind: ParamEnum, Values: []string{"<v>"}},
		},
		Handler: func(*Response, *Request) {},
	}
	page, err := homePage([]Route{route})
	if err != nil {
		t.Fatalf("homePage: %v", err)
	}
	s := string(page)
	for _, want := range []string{"jupiter&gt;saturn&gt;mars &amp; &#39;moons&#39;", "&lt;b&gt;bold&lt;/b&gt;", "&lt;v&gt;"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, raw := range []string{"<b>", "<v>", "jupiter>", "x<y>", "p'q"} {
		if strings.Contains(s, raw) {
			t.Errorf("page contains unescaped %q", raw)
		}
	}
}

// TestHomePageHeaders checks that the home page, whose buttons are
// mutations, runs no script and cannot be framed by another site (where a
// click on an overlaid button would be a same-origin POST).
func TestHomePageHeaders(t *testing.T) {
	rec := serve(t, newTestAdmin(t).Handler(), request{target: "/"})
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'self'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q allows scripts", csp)
	}
	if got := rec.Header().Get("X-Frame-Options"); got != "SAMEORIGIN" {
		t.Errorf("X-Frame-Options %q, want SAMEORIGIN", got)
	}
}
