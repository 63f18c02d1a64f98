package redact

import (
	"slices"
	"strings"
	"testing"
)

// TestSecrets: the given secrets, and the values of variables secret by
// name or listed, and those variables' names; a secret value too short to redact is named in a
// warning instead, and empty values are nothing.
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
