package options

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// maxQuotedRunes bounds how much of a bad value an error repeats: a
// --config-yaml can be megabytes long and the error must stay one line.
const maxQuotedRunes = 200

// quote renders user input for an error message the way Envoy does ('v'),
// but with control characters and invalid UTF-8 escaped, because the caller
// prints the error as a single line on stderr.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for n := 0; s != ""; n++ {
		if n == maxQuotedRunes {
			b.WriteString("...")
			break
		}
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r) // '\n', '\x00', '\u2028'
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	b.WriteByte('\'')
	return b.String()
}

// translateParseError rewrites pflag's errors in the command line's own
// wording and quotes what the user typed.
func translateParseError(err error) error {
	var (
		unknown  *pflag.NotExistError
		noValue  *pflag.ValueRequiredError
		badValue *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &badValue):
		return fmt.Errorf("invalid value %s for --%s: %w",
			quote(badValue.GetValue()), badValue.GetFlag().Name, badValue.Unwrap())
	case errors.As(err, &unknown):
		switch group := unknown.GetSpecifiedShortnames(); {
		case len(group) > 1:
			return fmt.Errorf("unknown option %s in %s", quote("-"+unknown.GetSpecifiedName()), quote("-"+group))
		case group != "":
			return fmt.Errorf("unknown option %s", quote("-"+unknown.GetSpecifiedName()))
		}
		return fmt.Errorf("unknown option %s", quote("--"+unknown.GetSpecifiedName()))
	case errors.As(err, &noValue):
		if noValue.GetSpecifiedShortnames() != "" {
			return fmt.Errorf("option -%s needs a value", noValue.GetSpecifiedName())
		}
		return fmt.Errorf("option --%s needs a value", noValue.GetSpecifiedName())
	case errors.As(err, &syntax):
		return fmt.Errorf("bad option syntax %s", quote(syntax.GetSpecifiedFlag()))
	default:
		return err
	}
}
