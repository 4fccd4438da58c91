// Package fieldpath locates configuration problems. A builder reports each
// problem of a configuration as an error whose text starts with the path of
// the field it concerns relative to what the builder was given
// ("routes[2].match.safe_regex.regex: ..."), several problems as
// errors.Join of them; each caller puts its own part of the path in front,
// so the operator reads one line per problem with its full path.
package fieldpath

import (
	"errors"
	"fmt"
)

// Prefix returns err with prefix put in front of each of its problems,
// keeping them joined; nil stays nil. The prefix ends with the separator
// the path needs ("route_config.", "virtual_hosts[0].").
func Prefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	problems := Split(err)
	for i, p := range problems {
		problems[i] = fmt.Errorf("%s%w", prefix, p)
	}
	if len(problems) == 1 {
		return problems[0]
	}
	return errors.Join(problems...)
}

// Split lists the problems of a tree of joined errors, depth first, in
// order; nil gives none.
func Split(err error) []error {
	if err == nil {
		return nil
	}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range multi.Unwrap() {
			out = append(out, Split(e)...)
		}
		return out
	}
	return []error{err}
}
