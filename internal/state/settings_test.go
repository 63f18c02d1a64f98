package state

import (
	"testing"

	"procmon/internal/protocol"
)

// Every entry of the settings' lists is validated: a private path stays
// inside the component, a secret_env entry is a variable name.
func TestSettingsListsValidatedEntryByEntry(t *testing.T) {
	cases := []struct {
		name    string
		private []string
		env     []string
		field   string
	}{
		{"climbs out", []string{".git", "../x"}, nil, "private_paths[1]"},
		{"climbs out deeper", []string{"a/../../x"}, nil, "private_paths[0]"},
		{"only up", []string{".."}, nil, "private_paths[0]"},
		{"absolute", []string{"/etc"}, nil, "private_paths[0]"},
		{"dot", []string{"."}, nil, "private_paths[0]"},
		{"empty path", []string{""}, nil, "private_paths[0]"},
		{"not clean", []string{"a//b"}, nil, "private_paths[0]"},
		{"trailing slash", []string{"a/"}, nil, "private_paths[0]"},
		{"dot component", []string{"./a"}, nil, "private_paths[0]"},
		{"NUL", []string{"a\x00b"}, nil, "private_paths[0]"},
		{"assignment", nil, []string{"OK_NAME", "BAD=NAME"}, "secret_env[1]"},
		{"empty name", nil, []string{""}, "secret_env[0]"},
		{"NUL in a name", nil, []string{"MY\x00TOKEN"}, "secret_env[0]"},
	}
	for _, c := range cases {
		s := ExampleSettings()
		s.PrivatePaths, s.SecretEnv = c.private, c.env
		err := s.Validate()
		if !protocol.HasCode(err, protocol.CodeInvalidRequest) || protocol.AsError(err).Details["field"] != c.field {
			t.Errorf("%s: got %v, want invalid_request naming %s", c.name, err, c.field)
		}
	}
	s := ExampleSettings()
	s.PrivatePaths = []string{".git", "config/secrets", "a..b", "..x"}
	// A name a shell could not write is still one a program may be given
	// (a container's DB-PASS), whose value must be redactable by name.
	s.SecretEnv = []string{"API_TOKEN", "_x", "lower9", "1TOKEN", "A B", "MY-TOKEN"}
	if err := s.Validate(); err != nil {
		t.Fatalf("valid lists refused: %v", err)
	}
}
