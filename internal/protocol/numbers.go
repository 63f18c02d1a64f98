package protocol

import "strings"

// integralNumbers rewrites each JSON number in data that is written with a
// fraction or an exponent but stands for an integer (1000.0, 1e3, 1.5E2,
// -0.0) as that integer, leaving strings and every other byte as they
// are. JSON Schema counts such a number as an integer, as do the agents
// whose numbers are all floats (a Python float, a JavaScript number past
// 1e21), while encoding/json refuses it for an integer field. A number
// that is no integer (1.5), or whose exponent is past maxShift, is left
// for the decoder to refuse. data is valid JSON.
func integralNumbers(data []byte) []byte {
	var out []byte // nil until a number is rewritten
	last := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(data) && strings.IndexByte("+-0123456789.eE", data[j]) >= 0 {
				j++
			}
			if n, ok := integral(string(data[i:j])); ok {
				out = append(append(out, data[last:i]...), n...)
				last = j
			}
			i = j - 1
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// maxShift bounds the exponent integral takes: far past the digits of any
// int64, and small enough that a hostile 1e999999999 costs nothing.
const maxShift = 40

// integral returns the integer that the JSON number s stands for, when it
// has a fraction or an exponent and its value is integral.
func integral(s string) (string, bool) {
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if !hasExp && !hasFrac {
		return "", false
	}
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	shift := 0
	if hasExp {
		e := strings.TrimPrefix(exp, "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimPrefix(e, "-")
		if e == "" || len(strings.TrimLeft(e, "0")) > 2 {
			return "", false
		}
		for _, d := range e {
			shift = 10*shift + int(d-'0')
		}
		if shift > maxShift {
			return "", false
		}
		if eneg {
			shift = -shift
		}
	}
	digits := intPart + frac
	shift -= len(frac)
	if shift < 0 {
		// The digits the point moves past must all be zeros.
		cut := max(len(digits)+shift, 0)
		if strings.Trim(digits[cut:], "0") != "" {
			return "", false
		}
		digits = digits[:cut]
	} else {
		digits += strings.Repeat("0", shift)
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", true
	}
	if neg {
		digits = "-" + digits
	}
	return digits, true
}
