package options

import (
	"strconv"
	"strings"
)

// usageIntro precedes the option list in the help text.
const usageIntro = `Usage: sidecar [options]
       sidecar capture [capture options]   (transparent capture rules; see sidecar capture --help)

Runs the Outrigger sidecar proxy. At least one of --config-path (-c) or
--config-yaml is required, except with --help, --version and
--hot-restart-version. Options take their value as --option value or
--option=value; an option may be given once, --stats-tag any number of times.

Options:
`

// Usage returns the --help text: every option with its value type, its
// default and a one-line description, in a stable order.
func Usage() string {
	defaults := defaultRawOptions()
	var b strings.Builder
	b.WriteString(usageIntro)
	for i := range optionTable {
		o := &optionTable[i]
		b.WriteString("  ")
		if o.short != "" {
			b.WriteString("-" + o.short + ", ")
		}
		b.WriteString("--" + o.long)
		if !o.isSwitch() {
			b.WriteString(" <" + o.arg + ">")
		}
		b.WriteString("  (default: " + o.defaultText(&defaults) + ")\n")
		b.WriteString("      " + o.help + "\n")
	}
	return b.String()
}

// defaultText is the default shown in the help, read from the parser's own
// defaults unless the table overrides it.
func (o *option) defaultText(defaults *rawOptions) string {
	switch {
	case o.def != "":
		return o.def
	case o.isSwitch():
		return "off"
	}
	s := o.value(defaults).String()
	if strings.ContainsRune(s, ' ') {
		return strconv.Quote(s)
	}
	return s
}
