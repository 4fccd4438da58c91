package admin

import (
	"net/http"
	"strings"
)

// helpRoutes serves /help, the text form of the route table.
func (a *Admin) helpRoutes() []Route {
	return []Route{{
		Path: "/help",
		Help: "print out list of admin commands",
		Handler: func(w *Response, _ *Request) {
			w.Text(http.StatusOK, a.helpNow())
		},
	}}
}

// helpText renders the route table in Envoy's newest /help layout
// (reference §2.2): one line per route sorted by path, mutating routes
// marked "(POST)", then one line per parameter, enum choices listed.
func helpText(routes []Route) string {
	var b strings.Builder
	b.WriteString("admin commands are:\n")
	for _, r := range routes {
		b.WriteString("  ")
		b.WriteString(r.Path)
		if r.Mutates {
			b.WriteString(" (POST)")
		}
		b.WriteString(": ")
		b.WriteString(r.Help)
		b.WriteByte('\n')
		for _, p := range r.Params {
			b.WriteString("      ")
			b.WriteString(p.Name)
			b.WriteString(": ")
			b.WriteString(p.Help)
			if p.Kind == ParamEnum {
				b.WriteString("; One of (")
				b.WriteString(strings.Join(p.Values, ", "))
				b.WriteByte(')')
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
