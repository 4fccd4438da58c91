package options

import (
	"errors"
	"strconv"
	"strings"
)

// The pflag.Value types below exist for their error messages: pflag's own
// numeric types report strconv's wording ("strconv.ParseUint: parsing ...:
// invalid syntax"), and a negative number is better called negative than
// invalid.

// textValue is a string option.
type textValue struct{ p *string }

func (v textValue) String() string     { return *v.p }
func (v textValue) Set(s string) error { *v.p = s; return nil }
func (v textValue) Type() string       { return "string" }

// switchValue is an option without a value (a flag). pflag still lets a
// user write --flag=false, so Set parses a boolean.
type switchValue struct{ p *bool }

func (v switchValue) String() string { return strconv.FormatBool(*v.p) }
func (v switchValue) Type() string   { return "bool" }

func (v switchValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not a boolean (true or false)")
	}
	*v.p = b
	return nil
}

// uintValue is an unsigned decimal integer no larger than max.
type uintValue struct {
	p   *uint64
	max uint64
}

func (v uintValue) String() string { return strconv.FormatUint(*v.p, 10) }

func (v uintValue) Type() string { return "uint" }

func (v uintValue) Set(s string) error {
	n, err := parseUint(s, v.max)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// parseUint accepts plain decimal digits only: no sign, no spaces, no base
// prefix, no underscores.
func parseUint(s string, limit uint64) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	switch {
	case err == nil && n <= limit:
		return n, nil
	case err == nil || errors.Is(err, strconv.ErrRange):
		return 0, errors.New("out of range, the maximum is " + strconv.FormatUint(limit, 10))
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return 0, errors.New("must not be negative")
	}
	return 0, errors.New("not an unsigned integer")
}

// listValue is a repeatable option: every occurrence appends.
type listValue struct{ p *[]string }

func (v listValue) String() string     { return strings.Join(*v.p, ",") }
func (v listValue) Set(s string) error { *v.p = append(*v.p, s); return nil }
func (v listValue) Type() string       { return "stringArray" }
