package logging

import (
	"strconv"
	"time"
)

// brokenTime is a record's time split into calendar fields once per record,
// so that a pattern with many date flags does not redo the arithmetic.
type brokenTime struct {
	year, month, day    int
	hour, minute, sec   int
	nsec, weekday, zone int // zone: seconds east of UTC
}

func breakDown(t time.Time) brokenTime {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	_, off := t.Zone()
	return brokenTime{
		year: y, month: int(mo), day: d,
		hour: h, minute: mi, sec: s,
		nsec: t.Nanosecond(), weekday: int(t.Weekday()), zone: off,
	}
}

// Names used by %a %A %b %B; never written.
var (
	shortDays   = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	longDays    = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	shortMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	longMonths  = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// timeFlag returns the appender of a date or time flag, or nil.
func timeFlag(ch byte) appender {
	switch ch {
	case 'a':
		return func(dst []byte, st *formatState) []byte { return append(dst, shortDays[st.tm.weekday]...) }
	case 'A':
		return func(dst []byte, st *formatState) []byte { return append(dst, longDays[st.tm.weekday]...) }
	case 'b':
		return func(dst []byte, st *formatState) []byte { return append(dst, shortMonths[st.tm.month-1]...) }
	case 'B':
		return func(dst []byte, st *formatState) []byte { return append(dst, longMonths[st.tm.month-1]...) }
	case 'c':
		return func(dst []byte, st *formatState) []byte { return appendDateTime(dst, &st.tm) }
	case 'C':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.year%100, 2) }
	case 'Y':
		return func(dst []byte, st *formatState) []byte { return strconv.AppendInt(dst, int64(st.tm.year), 10) }
	case 'D', 'x':
		return func(dst []byte, st *formatState) []byte { return appendShortDate(dst, &st.tm) }
	case 'm':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.month, 2) }
	case 'd':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.day, 2) }
	case 'H':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.hour, 2) }
	case 'I':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, hour12(st.tm.hour), 2) }
	case 'M':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.minute, 2) }
	case 'S':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.sec, 2) }
	case 'e':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.nsec/1e6, 3) }
	case 'f':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.nsec/1e3, 6) }
	case 'F':
		return func(dst []byte, st *formatState) []byte { return appendPadded(dst, st.tm.nsec, 9) }
	case 'p':
		return func(dst []byte, st *formatState) []byte { return append(dst, amPM(st.tm.hour)...) }
	case 'r':
		return func(dst []byte, st *formatState) []byte {
			dst = appendPadded(dst, hour12(st.tm.hour), 2)
			dst = append(dst, ':')
			dst = appendPadded(dst, st.tm.minute, 2)
			dst = append(dst, ':')
			dst = appendPadded(dst, st.tm.sec, 2)
			dst = append(dst, ' ')
			return append(dst, amPM(st.tm.hour)...)
		}
	case 'R':
		return func(dst []byte, st *formatState) []byte {
			dst = appendPadded(dst, st.tm.hour, 2)
			dst = append(dst, ':')
			return appendPadded(dst, st.tm.minute, 2)
		}
	case 'T', 'X':
		return func(dst []byte, st *formatState) []byte { return appendClock(dst, &st.tm) }
	case 'z':
		return func(dst []byte, st *formatState) []byte { return appendZone(dst, st.tm.zone) }
	}
	return nil
}

// appendDateTime is spdlog's %c: "%a %b %d %H:%M:%S %Y".
func appendDateTime(dst []byte, tm *brokenTime) []byte {
	dst = append(dst, shortDays[tm.weekday]...)
	dst = append(dst, ' ')
	dst = append(dst, shortMonths[tm.month-1]...)
	dst = append(dst, ' ')
	dst = appendPadded(dst, tm.day, 2)
	dst = append(dst, ' ')
	dst = appendClock(dst, tm)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, int64(tm.year), 10)
}

// appendShortDate is %D: MM/DD/YY.
func appendShortDate(dst []byte, tm *brokenTime) []byte {
	dst = appendPadded(dst, tm.month, 2)
	dst = append(dst, '/')
	dst = appendPadded(dst, tm.day, 2)
	dst = append(dst, '/')
	return appendPadded(dst, tm.year%100, 2)
}

// appendClock is %T: HH:MM:SS.
func appendClock(dst []byte, tm *brokenTime) []byte {
	dst = appendPadded(dst, tm.hour, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, tm.minute, 2)
	dst = append(dst, ':')
	return appendPadded(dst, tm.sec, 2)
}

// appendZone is %z: the UTC offset as [+-]HH:MM.
func appendZone(dst []byte, offset int) []byte {
	minutes := offset / 60
	sign := byte('+')
	if minutes < 0 {
		sign, minutes = '-', -minutes
	}
	dst = append(dst, sign)
	dst = appendPadded(dst, minutes/60, 2)
	dst = append(dst, ':')
	return appendPadded(dst, minutes%60, 2)
}

// hour12 maps 0-23 to 1-12. (spdlog prints midnight as 00; the
// specification's range for %I is 01-12, so midnight is 12 here.)
func hour12(h int) int {
	if h %= 12; h == 0 {
		return 12
	}
	return h
}

func amPM(h int) string {
	if h >= 12 {
		return "PM"
	}
	return "AM"
}

// appendPadded appends v in decimal with at least width digits.
func appendPadded(dst []byte, v, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	var digits [20]byte
	i := len(digits)
	for v >= 10 {
		i--
		digits[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	digits[i] = byte('0' + v)
	for n := len(digits) - i; n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, digits[i:]...)
}
