package logging

// compiler turns an spdlog pattern into the formatter's appenders, merging
// runs of literal text into one step.
type compiler struct {
	f     *Formatter
	steps []appender
	lit   []byte
}

// padSide says where spdlog's padding goes.
type padSide int8

const (
	padLeft   padSide = iota // %8l: right-aligned
	padRight                 // %-8l: left-aligned
	padCenter                // %=8l: centred
)

// maxPadWidth is spdlog's cap on a padding width.
const maxPadWidth = 64

// padding is spdlog's optional width spec between '%' and the flag.
type padding struct {
	enabled  bool
	width    int
	side     padSide
	truncate bool // '!' after the width: cut longer output to the width
}

// compile compiles pattern into f's steps.
func (c *compiler) compile(pattern string) error {
	steps, err := c.sub(pattern)
	if err != nil {
		return err
	}
	c.f.steps = steps
	return nil
}

// sub compiles pattern into a fresh list of steps, recording in c.f which
// parts of a record they need. %+ uses it for its fixed sub-patterns.
func (c *compiler) sub(pattern string) ([]appender, error) {
	savedSteps, savedLit := c.steps, c.lit
	c.steps, c.lit = nil, nil
	defer func() { c.steps, c.lit = savedSteps, savedLit }()
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' {
			c.lit = append(c.lit, pattern[i])
			continue
		}
		pad, next := parsePadding(pattern, i+1)
		if next >= len(pattern) {
			if !pad.truncate {
				return nil, errDanglingPercent
			}
			// "%10!" at the end: the '!' can only be the function flag.
			pad.truncate = false
			c.add(withPadding(c.flag('!'), pad))
			break
		}
		c.handleFlag(pattern[next], pad)
		i = next
	}
	c.flushLiteral()
	return c.steps, nil
}

// handleFlag compiles one flag character with its padding.
func (c *compiler) handleFlag(ch byte, pad padding) {
	if ch == '%' {
		c.lit = append(c.lit, '%') // spdlog never pads %%
		return
	}
	if a := c.flag(ch); a != nil {
		c.add(withPadding(a, pad))
		return
	}
	if isNoOutputFlag(ch) {
		return
	}
	if pad.truncate {
		// spdlog (issue 1617): in "%10!]" the '!' was the function flag,
		// not a truncation marker, and the unknown "flag" is literal text.
		pad.truncate = false
		c.add(withPadding(c.flag('!'), pad))
		c.lit = append(c.lit, ch)
		return
	}
	// spdlog prints an unknown flag as it was written.
	c.lit = append(c.lit, '%', ch)
}

// add appends a step after any pending literal text.
func (c *compiler) add(a appender) {
	c.flushLiteral()
	c.steps = append(c.steps, a)
}

func (c *compiler) flushLiteral() {
	if len(c.lit) == 0 {
		return
	}
	s := string(c.lit)
	c.lit = c.lit[:0]
	c.steps = append(c.steps, func(dst []byte, _ *formatState) []byte { return append(dst, s...) })
}

// parsePadding reads spdlog's padding spec ([-=]?digits!?) starting at i
// and returns it with the index of the flag character. Like spdlog, an
// alignment character with no digits after it is consumed and ignored.
func parsePadding(p string, i int) (padding, int) {
	if i >= len(p) {
		return padding{}, i
	}
	side := padLeft
	switch p[i] {
	case '-':
		side = padRight
		i++
	case '=':
		side = padCenter
		i++
	}
	if i >= len(p) || !isDigit(p[i]) {
		return padding{}, i
	}
	width := 0
	for ; i < len(p) && isDigit(p[i]); i++ {
		width = min(width*10+int(p[i]-'0'), maxPadWidth+1) // no overflow on long digit runs
	}
	pad := padding{enabled: true, width: min(width, maxPadWidth), side: side}
	if i < len(p) && p[i] == '!' {
		pad.truncate = true
		i++
	}
	return pad, i
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
