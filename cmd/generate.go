//go:build linux

package cmd

// The shipped completion scripts (completions/) and man pages (docs/man/)
// are generated from the command tree, and tests fail when they fall
// behind it. Regenerate both with: go generate ./cmd

//go:generate env PROCMON_UPDATE_COMPLETIONS=1 PROCMON_UPDATE_DOCS=1 go test -count=1 -run ^(TestCompletionsAreCurrent|TestManPagesAreCurrent)$ .
