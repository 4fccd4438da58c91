package admin

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// homeRoutes serves /, the HTML home page generated from the route table.
func (a *Admin) homeRoutes() []Route {
	return []Route{{
		Path: "/",
		Help: "Admin home page",
		Handler: func(w *Response, _ *Request) {
			home, err := a.homeNow()
			if err != nil {
				w.Text(http.StatusInternalServerError, err.Error())
				return
			}
			setHTMLHeaders(w, "")
			_, _ = w.Write(home)
		},
	}}
}

// homeTemplate is a self-contained page without script (see html.go).
// Mutating endpoints are POST forms, never links, so that a crawler
// following links cannot trigger them. html/template escapes every value for its context.
const homeTemplate = `<!DOCTYPE html>
<html lang='en'>
<head>
  <meta charset='UTF-8'>
  <title>Outrigger Admin</title>
  <link rel='icon' href='data:,'>
  <style>
` + pageStyle + `  </style>
</head>
<body>
<h1>Outrigger Admin</h1>
<table class='home-table'>
<thead><tr><th class='home-data'>Command</th><th class='home-data'>Description</th></tr></thead>
<tbody>
{{- range .}}
<tr class='vert-space'><td></td><td></td></tr>
<tr{{if .Gray}} class='gray'{{end}}>
  <td class='home-data'>
  {{- if .Plain}}<a href='{{.Link}}'>{{.Link}}</a>
  {{- else}}<form action='{{.Link}}' method='{{.Method}}' id='{{.Link}}' class='home-form'><button{{if not .Mutates}} class='button-as-link'{{end}}>{{.Link}}</button></form>
  {{- end}}</td>
  <td class='home-data'>{{.Help}}</td>
</tr>
{{- $row := .}}
{{- range .Params}}
<tr{{if $row.Gray}} class='gray'{{end}}>
  <td class='option'>
  {{- if .Flag}}<input type='checkbox' name='{{.Name}}' id='{{.ID}}' form='{{$row.Link}}'>
  {{- else if .Enum}}<select name='{{.Name}}' id='{{.ID}}' form='{{$row.Link}}'>
  {{- range .Values}}<option value='{{.}}'>{{.}}</option>{{end}}</select>
  {{- else}}<input type='text' name='{{.Name}}' id='{{.ID}}' form='{{$row.Link}}'>
  {{- end}}</td>
  <td class='home-data'><label for='{{.ID}}'>{{.Help}}</label></td>
</tr>
{{- end}}
{{- end}}
</tbody>
</table>
</body>
</html>
`

// homeRow is one endpoint of the home page.
type homeRow struct {
	Link    string // the path without its leading slash
	Help    string
	Method  string // of the form: "post" for mutations, else "get"
	Mutates bool
	Plain   bool // a plain link: non-mutating and without parameters
	Gray    bool // alternate rows are shaded, parameters with their endpoint
	Params  []homeParam
}

// homeParam is one parameter input of an endpoint's form.
type homeParam struct {
	ID, Name, Help string
	Flag, Enum     bool
	Values         []string
}

// homePage renders the home page for routes (sorted by path).
func homePage(routes []Route) ([]byte, error) {
	tmpl, err := template.New("home").Parse(homeTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse home page template: %w", err)
	}
	rows := make([]homeRow, 0, len(routes))
	for _, r := range routes {
		if r.Path == "/" {
			continue // no link to the page itself
		}
		row := homeRow{
			Link:    strings.TrimPrefix(r.Path, "/"),
			Help:    r.Help,
			Method:  "get",
			Mutates: r.Mutates,
			Plain:   !r.Mutates && len(r.Params) == 0,
			Gray:    len(rows)%2 == 1,
		}
		if r.Mutates {
			row.Method = "post"
		}
		for _, p := range r.Params {
			row.Params = append(row.Params, homeParam{
				ID:     fmt.Sprintf("param-%d-%s-%s", len(rows)+1, strings.ReplaceAll(row.Link, "/", "-"), p.Name),
				Name:   p.Name,
				Help:   p.Help,
				Flag:   p.Kind == ParamFlag,
				Enum:   p.Kind == ParamEnum,
				Values: p.Values,
			})
		}
		rows = append(rows, row)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, rows); err != nil {
		return nil, fmt.Errorf("render home page: %w", err)
	}
	return b.Bytes(), nil
}
