package stats

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// checkExposition validates Prometheus text exposition format 0.0.4 the
// way a scraper's parser does: TYPE lines, metric and label name syntax,
// label value escapes, float values, samples grouped under their family,
// no duplicate family, series or label, and sane histogram buckets.
//
// prometheus/common's expfmt parser needs modules that go.mod does not
// carry (prometheus/client_model, munnerz/goautoneg), so this strict
// checker stands in for it until they are added.
func checkExposition(text string) error {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return fmt.Errorf("output does not end with a newline")
	}
	nameRE := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	families := map[string]string{}
	series := map[string]bool{}
	family, typ := "", ""
	var lastLE float64
	var lastCount float64
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || !nameRE.MatchString(f[0]) {
				return fmt.Errorf("line %d: bad TYPE line %q", n+1, line)
			}
			switch f[1] {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				return fmt.Errorf("line %d: unknown type %q", n+1, f[1])
			}
			if _, dup := families[f[0]]; dup {
				return fmt.Errorf("line %d: family %s declared twice", n+1, f[0])
			}
			families[f[0]] = f[1]
			family, typ = f[0], f[1]
			lastLE, lastCount = -1, -1
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		open := strings.IndexByte(line, '{')
		closing := strings.LastIndexByte(line, '}')
		if open < 0 || closing < open {
			return fmt.Errorf("line %d: no label braces in %q", n+1, line)
		}
		name := line[:open]
		if !nameRE.MatchString(name) {
			return fmt.Errorf("line %d: bad metric name %q", n+1, name)
		}
		switch {
		case name == family:
		case (typ == "histogram" && name == family+"_bucket") || ((typ == "histogram" || typ == "summary") && (name == family+"_sum" || name == family+"_count")):
		default:
			return fmt.Errorf("line %d: sample %s outside its family (current %s %s)", n+1, name, family, typ)
		}
		labels, err := parseLabels(line[open+1:closing], labelRE)
		if err != nil {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
		valueText := strings.TrimPrefix(line[closing+1:], " ")
		value, err := strconv.ParseFloat(valueText, 64)
		if err != nil {
			return fmt.Errorf("line %d: bad value %q", n+1, valueText)
		}
		key := name + "{" + line[open+1:closing] + "}"
		if series[key] {
			return fmt.Errorf("line %d: duplicate series %s", n+1, key)
		}
		series[key] = true
		if name == family+"_bucket" {
			le, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				return fmt.Errorf("line %d: bad le %q", n+1, labels["le"])
			}
			if le <= lastLE || value < lastCount {
				return fmt.Errorf("line %d: buckets not increasing", n+1)
			}
			lastLE, lastCount = le, value
		}
		if typ == "histogram" && name == family+"_count" && value != lastCount {
			return fmt.Errorf("line %d: _count %v differs from the +Inf bucket %v", n+1, value, lastCount)
		}
	}
	return nil
}

func parseLabels(s string, labelRE *regexp.Regexp) (map[string]string, error) {
	labels := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, fmt.Errorf("bad label in %q", s)
		}
		name := s[:eq]
		if !labelRE.MatchString(name) {
			return nil, fmt.Errorf("bad label name %q", name)
		}
		var v strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' {
				i++
				if i == len(s) {
					return nil, fmt.Errorf("dangling escape")
				}
				switch s[i] {
				case '\\', '"':
					v.WriteByte(s[i])
				case 'n':
					v.WriteByte('\n')
				default:
					return nil, fmt.Errorf("bad escape \\%c", s[i])
				}
				continue
			}
			if s[i] == '\n' {
				return nil, fmt.Errorf("raw newline in label value")
			}
			v.WriteByte(s[i])
		}
		if i == len(s) {
			return nil, fmt.Errorf("unterminated label value")
		}
		if _, dup := labels[name]; dup {
			return nil, fmt.Errorf("duplicate label %s", name)
		}
		labels[name] = v.String()
		s = s[i+1:]
		if s != "" {
			if s[0] != ',' {
				return nil, fmt.Errorf("expected ',' in labels at %q", s)
			}
			s = s[1:]
		}
	}
	return labels, nil
}
