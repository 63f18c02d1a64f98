package redact

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSecrets: the given secrets, and the values of variables secret by
// name or listed, and those variables' names; a secret value too short
// to redact is named in a warning instead, and empty values are nothing.
func TestSecrets(t *testing.T) {
	long := strings.Repeat("s", MinSecretLen)
	env := []string{
		"PATH=/usr/bin",
		"API_TOKEN=" + long + "1",
		"db_password=" + long + "2",
		"SIGNING_KEY=" + long + "3",
		"KEYBOARD=" + long + "not", // KEY not as a suffix
		"PLAIN=" + long + "4",      // listed by name
		"SHORT_SECRET=abc",
		"EMPTY_TOKEN=",
		"DB_PASS=" + long + "5",
		"MYSQL_PWD=" + long + "6",
		"SMTP_PASSWD=" + long + "7",
		"GPG_PASSPHRASE=" + long + "8",
		"MAPS_APIKEY=" + long + "9",
		"PWD=/home/" + long + "not", // the working directory
		"OLDPWD=/home/" + long + "not",
		"SSH_ASKPASS=/usr/bin/" + long + "not", // a program
		"COMPASS=" + long + "not",
	}
	secrets, vars, warnings := Secrets(env, []string{"given-" + long}, []string{"PLAIN"})
	want := []string{"given-" + long, long + "1", long + "2", long + "3", long + "4", long + "5", long + "6", long + "7", long + "8", long + "9"}
	if !slices.Equal(secrets, want) {
		t.Errorf("secrets %q, want %q", secrets, want)
	}
	wantVars := []string{"API_TOKEN", "db_password", "SIGNING_KEY", "PLAIN", "DB_PASS", "MYSQL_PWD", "SMTP_PASSWD", "GPG_PASSPHRASE", "MAPS_APIKEY"}
	if !slices.Equal(vars, wantVars) {
		t.Errorf("vars %q, want %q", vars, wantVars)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "SHORT_SECRET") || strings.Contains(warnings[0], "abc") {
		t.Errorf("warnings %q, want one naming SHORT_SECRET without its value", warnings)
	}
}

// TestCompilable: New compiles at most MaxSecretsLen bytes of distinct
// secrets, whose needles stay within maxNeedleBytes and maxNeedles;
// Compilable says so beforehand, and New refuses the rest without
// compiling them. A secret given many times counts once.
func TestCompilable(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	b64 := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[rnd.IntN(64)]
		}
		return string(b)
	}
	// 9 bytes, each escaped by some escaping.
	escaped := strings.Repeat("\x01\"\\<>&\x7fé", MaxSecretsLen/9)
	// 8192 secrets of 8 bytes: within the bound on bytes, past the one on
	// needles (each has four, its base64 forms alike in none).
	var many []string
	for i := range 8192 {
		many = append(many, fmt.Sprintf("%08x", uint32(i)*2654435761))
	}
	key := b64(MaxSecretsLen)
	var lines strings.Builder
	for body := b64(MaxSecretsLen); lines.Len()+65+60 <= MaxSecretsLen; body = body[64:] {
		lines.WriteString(body[:64] + "\n")
	}
	pem := "-----BEGIN PRIVATE KEY-----\n" + lines.String() + "-----END PRIVATE KEY-----"
	for _, c := range []struct {
		name    string
		secrets []string
		want    bool
		// pastBytes says the set is past the bound on bytes; the others
		// that are refused are past a bound on needles alone.
		pastBytes bool
	}{
		{"none", nil, true, false},
		{"a key of the bound", []string{key}, true, false},
		{"a PEM key of the bound", []string{pem}, true, false},
		{"the same key, forty times", slices.Repeat([]string{key}, 40), true, false},
		{"a byte past the bound", []string{key[:MaxSecretsLen/2], key[MaxSecretsLen/2:] + "x"}, false, true},
		{"escaped characters, a seventh of the bound", []string{escaped[:MaxSecretsLen/7]}, true, false},
		{"escaped characters, to the bound", []string{escaped}, false, false},
		{"a few hundred short secrets", many[:400], true, false},
		{"thousands of short secrets", many, false, false},
	} {
		if past := totalLen(distinct(c.secrets)) > MaxSecretsLen; past != c.pastBytes {
			t.Fatalf("%s: past the bound on bytes %v, meant to be %v", c.name, past, c.pastBytes)
		}
		if got := Compilable(c.secrets); got != c.want {
			t.Errorf("%s: Compilable %v, want %v", c.name, got, c.want)
		}
		if c.want {
			continue
		}
		if _, err := New(c.secrets); !errors.Is(err, errTooMuchSecret) {
			t.Errorf("%s: New answered %v, want errTooMuchSecret", c.name, err)
		}
	}
	// Each bound on needles holds where it is set, not somewhere near it.
	needles := func(secrets []string) (n, size int) {
		pats, err := needlePatterns(secrets, true)
		if err != nil {
			t.Fatalf("%d secrets: %v", len(secrets), err)
		}
		for _, p := range pats {
			size += len(p.text)
		}
		return len(pats), size
	}
	if n, _ := needles(many[:maxNeedles/4]); n != maxNeedles || !Compilable(many[:maxNeedles/4]) || Compilable(many[:maxNeedles/4+1]) {
		t.Errorf("%d short secrets have %d needles: want the most taken, %d, and one secret more refused", maxNeedles/4, n, maxNeedles)
	}
	// The longest run of escaped characters taken, in steps of 9 bytes.
	lo, hi := 0, len(escaped)/9 // taken, refused
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; Compilable([]string{escaped[:mid*9]}) {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, within := needles([]string{escaped[:lo*9]})
	step := within / lo // needle bytes per 9 bytes of secret
	if within > maxNeedleBytes || within < maxNeedleBytes-2*step {
		t.Errorf("the longest run of escaped characters taken has %d bytes of needles: want within %d of %d", within, 2*step, maxNeedleBytes)
	}
}
