//go:build linux

package cmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// environment is what procmon reads of its environment, as procmon.1
// gives it: each variable with one line on what it does (Markdown, `code`
// spans only), and after them what a started command gets.
// TestEnvironmentIsWhatTheCodeReads holds the list to the code.
var environment = []struct{ name, meaning string }{
	{"PROCMON_STATE_DIR", "The state directory: records, logs, settings. One that others may write is refused (`state_unsafe`)."},
	{"XDG_STATE_HOME", "Without `PROCMON_STATE_DIR`, the state directory is `$XDG_STATE_HOME/procmon`."},
	{"HOME", "Without either, the state directory is `~/.local/state/procmon`."},
	{"PROCMON_RUN", "The run to act in when `--run` is not given (else the run `default`); `procmon mcp` joins it instead of creating a run."},
	{"NO_COLOR", "Set and not empty: the view for a person is never coloured."},
	{"TERM", "`dumb`: the view for a person is never coloured, and `wait` draws no progress line."},
	{"COLUMNS", "The width a table of the view for a person is fitted to when stdout is not a terminal of known width (`-o text` into a pipe, as under `watch`); without it, 80 on a terminal and any width in a pipe."},
	{"PATH", "Where `start` and `exec` find a command named without a slash: in the PATH the command will have (procmon's, or `--env PATH=...`), else in `/usr/local/bin:/usr/bin:/bin`."},
}

// environmentPassed is what procmon does with the rest of its
// environment, in Markdown.
const environmentPassed = "`start` and `exec` give the command procmon's environment with each `--env` over it. " +
	"The values of its variables named like secrets (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_KEY` and the others `procmon start --help` lists), " +
	"and of those named by `--secret-env` or the settings' `secret_env`, are redacted from its output."

// environmentNotForUsers are variables procmon's code reads that a user
// has no reason to set, and why they are left out of the man page.
var environmentNotForUsers = map[string]string{
	"GORACE":              "read by a race-built procmon only, which the tests run; a guardian keeps it",
	"PROCMON_FAULT_AT":    "fault injection, in a build with -tags faultpoints only",
	"PROCMON_FAULT_CLOCK": "a stepped wall clock for the fault suite, in a build with -tags faultpoints only",
	"PROCMON_UPDATE":      "has the tests rewrite their golden files",
}

// TestEnvironmentIsWhatTheCodeReads fails when procmon's code reads a
// variable that environment does not list (nor environmentNotForUsers
// excuses), or environment lists one the code no longer reads. Reads are
// found in the source: a call of Getenv, getenv or LookupEnv with a
// constant name, and a "NAME=" prefix cut from an environment's entries.
func TestEnvironmentIsWhatTheCodeReads(t *testing.T) {
	read := map[string]string{} // name -> where
	consts := map[string]map[string]string{}
	for _, root := range []string{"../cmd", "../internal", "../main.go"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			dir := filepath.Dir(path)
			if consts[dir] == nil {
				consts[dir] = packageConsts(t, dir)
			}
			for name, pos := range envReads(t, path, consts[dir]) {
				read[name] = pos
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	documented := map[string]bool{}
	for _, v := range environment {
		documented[v.name] = true
		if _, ok := read[v.name]; !ok {
			t.Errorf("procmon.1 says procmon reads %s, but no code reads it", v.name)
		}
	}
	for name, where := range read {
		if _, excused := environmentNotForUsers[name]; !documented[name] && !excused {
			t.Errorf("%s reads %s, which the environment list of procmon.1 does not give", where, name)
		}
	}
}

// envReads finds the environment variables one Go file reads, with the
// position of a read of each. A name given as a constant of the file's
// package is looked up in consts, that package's string constants.
func envReads(t *testing.T, path string, consts map[string]string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	value := func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
				return s, true
			}
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok
		}
		return "", false
	}
	reads := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var fn string
		switch f := call.Fun.(type) {
		case *ast.Ident:
			fn = f.Name
		case *ast.SelectorExpr:
			fn = f.Sel.Name
		}
		switch {
		case slices.Contains([]string{"Getenv", "getenv", "LookupEnv"}, fn):
			if name, ok := value(call.Args[0]); ok {
				reads[name] = fset.Position(call.Pos()).String()
			}
		case (fn == "CutPrefix" || fn == "HasPrefix") && len(call.Args) == 2:
			if prefix, ok := value(call.Args[1]); ok && strings.HasSuffix(prefix, "=") {
				reads[strings.TrimSuffix(prefix, "=")] = fset.Position(call.Pos()).String()
			}
		}
		return true
	})
	return reads
}

// packageConsts are the string constants declared in the Go files of dir,
// tests and every build constraint included.
func packageConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return consts
}
