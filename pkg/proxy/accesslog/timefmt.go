package accesslog

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// timeLayout is a compiled strftime-style layout for %START_TIME(...)%.
// Each directive is a small code, so formatting appends digits straight
// into the line without allocating.
type timeLayout struct {
	items []timeItem
	// whole is how many leading items depend on the whole second only
	// (everything but the fractions): their text is the same for every
	// line of a second, and is rendered once a second into cache.
	whole int
	// cache is the latest second's text of items[:whole] (and of the
	// seconds of a %E<n>S at items[whole]). Lines of many goroutines
	// share it; a new second replaces it.
	cache atomic.Pointer[secondText]
	// millisZ: the items after the whole-second ones are %E3S and a
	// literal "Z", the default layout's end, appended in one go.
	millisZ bool
}

// secondText is the rendering of a layout's whole-second items for the
// second unix (UTC).
type secondText struct {
	unix int64
	text []byte
}

// timeItem is a literal or one directive; digits is the number of
// fractional-second digits of fracDigits and secondsFrac.
type timeItem struct {
	kind    timeDirective
	literal string
	digits  int
}

type timeDirective uint8

const (
	tLiteral     timeDirective = iota
	tYear                      // %Y
	tYear2                     // %y
	tMonth                     // %m
	tDay                       // %d
	tDaySpace                  // %e
	tHour                      // %H
	tHour12                    // %I
	tMinute                    // %M
	tSecond                    // %S
	tSecondsFrac               // %E<n>S, %E*S: seconds with a fraction
	tFrac                      // %f, %<n>f: the fraction alone
	tAMPM                      // %p
	tYearDay                   // %j
	tWeekdayName               // %a
	tWeekdayLong               // %A
	tMonthName                 // %b, %h
	tMonthLong                 // %B
	tZone                      // %z: +hhmm
	tZoneColon                 // %Ez: +hh:mm
	tZoneName                  // %Z
	tEpoch                     // %s
)

// defaultTimeLayout is Envoy's default START_TIME rendering,
// "%Y-%m-%dT%H:%M:%E3SZ" in UTC.
const defaultTimeLayout = "%Y-%m-%dT%H:%M:%E3SZ"

// compileTimeLayout compiles a START_TIME argument; no argument (or an
// empty one) is Envoy's default layout.
func compileTimeLayout(layout string, given bool) (*timeLayout, error) {
	if !given || layout == "" {
		layout = defaultTimeLayout
	}
	l := &timeLayout{}
	lit := make([]byte, 0, len(layout))
	add := func(it timeItem) {
		if len(lit) > 0 {
			l.items = append(l.items, timeItem{kind: tLiteral, literal: string(lit)})
			lit = lit[:0]
		}
		l.items = append(l.items, it)
	}
	for i := 0; i < len(layout); i++ {
		c := layout[i]
		if c != '%' {
			lit = append(lit, c)
			continue
		}
		i++
		if i >= len(layout) {
			return nil, fmt.Errorf("time format %q ends with a lone '%%'", layout)
		}
		d := layout[i]
		if items, ok := directives[d]; ok {
			for _, it := range items {
				if it.kind == tLiteral {
					lit = append(lit, it.literal...)
				} else {
					add(it)
				}
			}
			continue
		}
		switch d {
		case '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if i+1 >= len(layout) || layout[i+1] != 'f' {
				return nil, fmt.Errorf("time format %q: %%%c must be followed by 'f'", layout, d)
			}
			add(timeItem{kind: tFrac, digits: int(d - '0')})
			i++
		case 'E':
			n, err := parseExtended(layout, i)
			if err != nil {
				return nil, err
			}
			switch {
			case layout[i+1] == 'z':
				add(timeItem{kind: tZoneColon})
			default:
				add(timeItem{kind: tSecondsFrac, digits: n})
			}
			i += 2
		default:
			return nil, fmt.Errorf("time format %q: directive %%%c is not supported by Outrigger", layout, d)
		}
	}
	if len(lit) > 0 {
		l.items = append(l.items, timeItem{kind: tLiteral, literal: string(lit)})
	}
	l.whole = len(l.items)
	for i, it := range l.items {
		if it.kind == tFrac || it.kind == tSecondsFrac {
			l.whole = i
			break
		}
	}
	tail := l.items[l.whole:]
	l.millisZ = len(tail) == 2 && tail[0].kind == tSecondsFrac && tail[0].digits == 3 &&
		tail[1].kind == tLiteral && tail[1].literal == "Z"
	return l, nil
}

// directives are the one-letter directives, each with the items it stands
// for (the composites %F, %T, %R and %D stand for several). Immutable.
var directives = map[byte][]timeItem{
	'%': {{literal: "%"}},
	'n': {{literal: "\n"}},
	't': {{literal: "\t"}},
	'Y': {{kind: tYear}},
	'y': {{kind: tYear2}},
	'm': {{kind: tMonth}},
	'd': {{kind: tDay}},
	'e': {{kind: tDaySpace}},
	'H': {{kind: tHour}},
	'I': {{kind: tHour12}},
	'M': {{kind: tMinute}},
	'S': {{kind: tSecond}},
	'p': {{kind: tAMPM}},
	'j': {{kind: tYearDay}},
	'a': {{kind: tWeekdayName}},
	'A': {{kind: tWeekdayLong}},
	'b': {{kind: tMonthName}},
	'h': {{kind: tMonthName}},
	'B': {{kind: tMonthLong}},
	'z': {{kind: tZone}},
	'Z': {{kind: tZoneName}},
	's': {{kind: tEpoch}},
	'f': {{kind: tFrac, digits: 9}},
	'F': {{kind: tYear}, {literal: "-"}, {kind: tMonth}, {literal: "-"}, {kind: tDay}},
	'T': {{kind: tHour}, {literal: ":"}, {kind: tMinute}, {literal: ":"}, {kind: tSecond}},
	'R': {{kind: tHour}, {literal: ":"}, {kind: tMinute}},
	'D': {{kind: tMonth}, {literal: "/"}, {kind: tDay}, {literal: "/"}, {kind: tYear2}},
}

// parseExtended parses the Abseil extensions after "%E" at layout[i]: %Ez,
// %E*S and %E<digit>S. It returns the number of fractional digits.
func parseExtended(layout string, i int) (int, error) {
	if i+1 < len(layout) && layout[i+1] == 'z' {
		return 0, nil
	}
	if i+2 < len(layout) && layout[i+2] == 'S' {
		switch d := layout[i+1]; {
		case d == '*':
			return -1, nil
		case d >= '0' && d <= '9':
			return int(d - '0'), nil
		}
	}
	return 0, fmt.Errorf("time format %q: only %%Ez, %%E*S and %%E<digit>S are supported after %%E", layout)
}

// append renders t (in UTC, as callers give it) with the layout: the
// whole-second part from the cache, rendered again when the second
// changes, then the fraction and what follows it.
func (l *timeLayout) append(dst []byte, t time.Time) []byte {
	if l.whole == 0 || t.Location() != time.UTC {
		return render(dst, t, l.items)
	}
	sec := t.Unix()
	c := l.cache.Load()
	if c == nil || c.unix != sec {
		text := render(nil, t, l.items[:l.whole])
		if l.whole < len(l.items) && l.items[l.whole].kind == tSecondsFrac {
			text = appendPadded(text, t.Second(), 2, '0')
		}
		c = &secondText{unix: sec, text: text}
		l.cache.Store(c)
	}
	dst = append(dst, c.text...)
	if l.millisZ {
		ms := t.Nanosecond() / 1e6
		return append(dst, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	}
	tail := l.items[l.whole:]
	if len(tail) > 0 && tail[0].kind == tSecondsFrac {
		dst = appendFraction(dst, t.Nanosecond(), tail[0].digits, true)
		tail = tail[1:]
	}
	for i, it := range tail {
		switch it.kind {
		case tLiteral:
			dst = append(dst, it.literal...)
		case tFrac:
			dst = appendFraction(dst, t.Nanosecond(), it.digits, false)
		default:
			return render(dst, t, tail[i:])
		}
	}
	return dst
}

// render renders t with items. The date and the clock are computed once
// each, not once per directive: each of time.Time's Year, Month, Day,
// Hour... converts the instant again.
func render(dst []byte, t time.Time, items []timeItem) []byte {
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	for _, it := range items {
		switch it.kind {
		case tLiteral:
			dst = append(dst, it.literal...)
		case tYear:
			dst = appendPadded(dst, year, 4, '0')
		case tYear2:
			dst = appendPadded(dst, year%100, 2, '0')
		case tMonth:
			dst = appendPadded(dst, int(month), 2, '0')
		case tDay:
			dst = appendPadded(dst, day, 2, '0')
		case tDaySpace:
			dst = appendPadded(dst, day, 2, ' ')
		case tHour:
			dst = appendPadded(dst, hour, 2, '0')
		case tHour12:
			h := hour % 12
			if h == 0 {
				h = 12
			}
			dst = appendPadded(dst, h, 2, '0')
		case tMinute:
			dst = appendPadded(dst, minute, 2, '0')
		case tSecond:
			dst = appendPadded(dst, second, 2, '0')
		case tSecondsFrac:
			dst = appendPadded(dst, second, 2, '0')
			dst = appendFraction(dst, t.Nanosecond(), it.digits, true)
		case tFrac:
			dst = appendFraction(dst, t.Nanosecond(), it.digits, false)
		case tAMPM:
			if t.Hour() < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case tYearDay:
			dst = appendPadded(dst, t.YearDay(), 3, '0')
		case tWeekdayName:
			dst = append(dst, t.Weekday().String()[:3]...)
		case tWeekdayLong:
			dst = append(dst, t.Weekday().String()...)
		case tMonthName:
			dst = append(dst, t.Month().String()[:3]...)
		case tMonthLong:
			dst = append(dst, t.Month().String()...)
		case tZone:
			dst = t.AppendFormat(dst, "-0700")
		case tZoneColon:
			dst = t.AppendFormat(dst, "-07:00")
		case tZoneName:
			dst = t.AppendFormat(dst, "MST")
		case tEpoch:
			dst = strconv.AppendInt(dst, t.Unix(), 10)
		}
	}
	return dst
}

// appendPadded appends n with at least width digits, padded with pad.
func appendPadded(dst []byte, n, width int, pad byte) []byte {
	// Two zero-padded digits are most directives of a timestamp.
	if width == 2 && pad == '0' && n >= 0 && n < 100 {
		return append(dst, byte('0'+n/10), byte('0'+n%10))
	}
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	digits := 1
	for v := n; v >= 10; v /= 10 {
		digits++
	}
	for ; digits < width; digits++ {
		dst = append(dst, pad)
	}
	return strconv.AppendInt(dst, int64(n), 10)
}

// appendFraction appends the first digits of the nanoseconds (all nine,
// trailing zeros trimmed, when digits is -1), with a leading '.' when dot.
func appendFraction(dst []byte, ns, digits int, dot bool) []byte {
	// The default layout's milliseconds: divisions by constants.
	if digits == 3 {
		if dot {
			dst = append(dst, '.')
		}
		ms := ns / 1e6
		return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	}
	// Another fixed number of digits needs only those digits: no
	// trimming, no division per discarded digit.
	if digits > 0 && digits < 9 {
		if dot {
			dst = append(dst, '.')
		}
		v := ns / pow10[9-digits]
		for i := digits - 1; i >= 0; i-- {
			dst = append(dst, byte('0'+v/pow10[i]%10))
		}
		return dst
	}
	var buf [9]byte
	for i := 8; i >= 0; i-- {
		buf[i] = byte('0' + ns%10)
		ns /= 10
	}
	frac := buf[:]
	if digits < 0 {
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
	} else {
		frac = frac[:digits]
	}
	if len(frac) == 0 {
		return dst
	}
	if dot {
		dst = append(dst, '.')
	}
	return append(dst, frac...)
}

// pow10 are the powers of ten below a second in nanoseconds.
var pow10 = [...]int{1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000}
