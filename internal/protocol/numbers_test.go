package protocol

import "testing"

func TestIntegralNumbers(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1000.0}`:                       `{"a":1000}`,
		`{"a":1e3,"b":1.5E2,"c":-2.50e1}`:    `{"a":1000,"b":150,"c":-25}`,
		`{"a":-0.0,"b":0e5,"c":0.000}`:       `{"a":0,"b":0,"c":0}`,
		`{"a":120e-1,"b":1200E-2}`:           `{"a":12,"b":12}`,
		`{"a":1.5,"b":1e-3,"c":12.01}`:       `{"a":1.5,"b":1e-3,"c":12.01}`,
		`{"a":1e999999999,"b":1e41}`:         `{"a":1e999999999,"b":1e41}`,
		`{"a":9223372036854775807.0}`:        `{"a":9223372036854775807}`,
		`{"s":"1.0 \"2e3\" \\","n":[3.0,4]}`: `{"s":"1.0 \"2e3\" \\","n":[3,4]}`,
		`{"a":100,"b":-7,"c":"x"}`:           `{"a":100,"b":-7,"c":"x"}`,
		`{"a":1e+2}`:                         `{"a":100}`,
		`{"k\"1.0":1.0}`:                     `{"k\"1.0":1}`,
	} {
		if got := string(integralNumbers([]byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

// TestDecodeStrictTakesIntegralNumbers: a number JSON Schema counts as an
// integer is one for an integer field; anything else is still refused,
// naming the field.
func TestDecodeStrictTakesIntegralNumbers(t *testing.T) {
	var v struct {
		N *int64 `json:"n"`
	}
	for _, in := range []string{`{"n":1000.0}`, `{"n":1e3}`, `{"n":10000E-1}`} {
		v.N = nil
		if err := DecodeStrict([]byte(in), &v); err != nil || v.N == nil || *v.N != 1000 {
			t.Errorf("%s: %v, %v", in, err, v.N)
		}
	}
	for _, in := range []string{`{"n":1.5}`, `{"n":1e19}`, `{"n":1e400}`, `{"n":"1"}`} {
		if err := DecodeStrict([]byte(in), &v); !HasCode(err, CodeInvalidRequest) {
			t.Errorf("%s: %v, want invalid_request", in, err)
		}
	}
}
