package redact

import (
	"fmt"
	"strings"
)

// SecretName reports whether an environment variable holds a secret by
// its name alone, in any case: *TOKEN*, *SECRET*, *PASSWORD*,
// *CREDENTIAL* and *_KEY, as SPEC 3 names them, and the spellings of
// the same that services read their credentials from: *PASSWD*,
// *PASSPHRASE*, *APIKEY*, *_PASS (DB_PASS) and *_PWD (MYSQL_PWD; not
// PWD or OLDPWD, which are directories).
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range [...]string{"TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "PASSPHRASE", "APIKEY"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_PASS") || strings.HasSuffix(n, "_PWD")
}

// Secrets gathers the values a command's output is redacted of: the ones
// given, and the values of the variables of env (NAME=VALUE) that are
// secret, by SecretName or because names lists them; vars names those
// variables. A secret variable whose value is shorter than MinSecretLen
// would shred ordinary output: it is left alone and named in a warning.
func Secrets(env, given, names []string) (secrets, vars, warnings []string) {
	secrets = append(secrets, given...)
	named := make(map[string]bool, len(names))
	for _, n := range names {
		named[n] = true
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || !named[k] && !SecretName(k) {
			continue
		}
		if len(v) < MinSecretLen {
			warnings = append(warnings, fmt.Sprintf("env %s looks secret but its value is shorter than %d bytes, so it is not redacted", k, MinSecretLen))
			continue
		}
		secrets = append(secrets, v)
		vars = append(vars, k)
	}
	return secrets, vars, warnings
}
