package redact

import (
	"fmt"
	"strings"
)

// SecretName reports whether an environment variable holds a secret by
// its name alone: *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL* or *_KEY,
// in any case.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "TOKEN") || strings.Contains(n, "SECRET") ||
		strings.Contains(n, "PASSWORD") || strings.Contains(n, "CREDENTIAL") ||
		strings.HasSuffix(n, "_KEY")
}

// Secrets gathers the values a command's output is redacted of: the ones
// given, and the values of the variables of env (NAME=VALUE) that are
// secret, by SecretName or because names lists them. A secret variable
// whose value is shorter than MinSecretLen would shred ordinary output:
// it is left alone and named in a warning.
func Secrets(env, given, names []string) (secrets, warnings []string) {
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
	}
	return secrets, warnings
}
