package httpfilter

import (
	"errors"
	"fmt"
)

// PrefixErrors puts the field path prefix before err, and before each
// error that err joins (errors.Join), so that every line of a
// configuration's errors names its field, however deep.
func PrefixErrors(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, PrefixErrors(prefix, e))
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s%w", prefix, err)
}
