package bootstrap

// textKind classifies text-format tokens. The scanner knows only enough of
// the format to follow its structure; values are interpreted by prototext.
type textKind int

const (
	textEOF textKind = iota
	// textWord is an identifier or a number, signs and exponents included.
	textWord
	// textString is one quoted string.
	textString
	// textPunct is any other single character.
	textPunct
)

// textToken is one token of text-format input.
type textToken struct {
	kind textKind
	text string
}

// isPunct reports whether t is the punctuation character c.
func (t textToken) isPunct(c byte) bool {
	return t.kind == textPunct && len(t.text) == 1 && t.text[0] == c
}

// textScanner splits text-format input into tokens, with one token of
// look-ahead.
type textScanner struct {
	src    []byte
	off    int
	peeked *textToken
}

// next returns the next token.
func (s *textScanner) next() (textToken, error) {
	if s.peeked != nil {
		t := *s.peeked
		s.peeked = nil
		return t, nil
	}
	return s.scan()
}

// peek returns the next token without consuming it.
func (s *textScanner) peek() (textToken, error) {
	if s.peeked == nil {
		t, err := s.scan()
		if err != nil {
			return textToken{}, err
		}
		s.peeked = &t
	}
	return *s.peeked, nil
}

// acceptPunct consumes the next token if it is the punctuation c. A scan
// error counts as "not c"; the following next reports it.
func (s *textScanner) acceptPunct(c byte) bool {
	t, err := s.peek()
	if err != nil || !t.isPunct(c) {
		return false
	}
	s.peeked = nil
	return true
}

// scan reads one token from the input.
func (s *textScanner) scan() (textToken, error) {
	s.skipSpace()
	if s.off >= len(s.src) {
		return textToken{kind: textEOF}, nil
	}
	start := s.off
	c := s.src[s.off]
	switch {
	case c == '"' || c == '\'':
		s.off++
		for {
			if s.off >= len(s.src) || s.src[s.off] == '\n' {
				return textToken{}, errTextSyntax
			}
			switch s.src[s.off] {
			case '\\':
				s.off += 2
				continue
			case c:
				s.off++
				return textToken{kind: textString, text: string(s.src[start:s.off])}, nil
			}
			s.off++
		}
	case isWordChar(c):
		for s.off < len(s.src) && isWordChar(s.src[s.off]) {
			s.off++
		}
		return textToken{kind: textWord, text: string(s.src[start:s.off])}, nil
	default:
		s.off++
		return textToken{kind: textPunct, text: string(c)}, nil
	}
}

// typeName reads the rest of a bracketed extension name or Any type URL,
// after its '[', up to and including ']'. As in prototext, whitespace and
// comments between its characters are ignored.
func (s *textScanner) typeName() (string, error) {
	if s.peeked != nil {
		// The grammar never peeks past a '['.
		return "", errTextSyntax
	}
	var name []byte
	for {
		s.skipSpace()
		if s.off >= len(s.src) {
			return "", errTextSyntax
		}
		c := s.src[s.off]
		s.off++
		if c == ']' {
			if len(name) == 0 {
				return "", errTextSyntax
			}
			return string(name), nil
		}
		if c == '[' || c == '"' || c == '\'' || c == '{' || c == '}' {
			return "", errTextSyntax
		}
		name = append(name, c)
	}
}

// skipSpace skips whitespace and '#' comments.
func (s *textScanner) skipSpace() {
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			s.off++
		case '#':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.off++
			}
		default:
			return
		}
	}
}

// isWordChar reports whether c can be part of an identifier or a number
// (prototext's own delimiter rule).
func isWordChar(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' || isLetter(c) || isDigit(c)
}
