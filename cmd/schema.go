//go:build linux

package cmd

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"procmon/internal/protocol"
	"procmon/internal/schema"
)

// schemaSet is the contract of one command: its request, its response
// and its error, each a standalone JSON Schema document.
type schemaSet struct {
	Command     string        `json:"command"`
	Tool        string        `json:"tool,omitempty"`
	Description string        `json:"description"`
	Request     schema.Schema `json:"request"`
	Response    schema.Schema `json:"response"`
	Error       schema.Schema `json:"error"`
	// ToolInput and ToolOutput are the agent tool's schemas (MCP's
	// inputSchema and outputSchema): the request and response, except
	// that process_status shows one monitor, so it needs monitor_id and
	// answers with the monitor's view.
	ToolInput  schema.Schema `json:"tool_input,omitempty"`
	ToolOutput schema.Schema `json:"tool_output,omitempty"`
}

type schemaRequest struct {
	Command string `json:"command,omitempty"`
}

const schemaIDBase = "https://procmon.invalid/schema/"

// schemaSets derives every command's schemas from its Go types, once.
var schemaSets = sync.OnceValues(func() ([]schemaSet, error) {
	errSchema, err := schemaCatalog.For(reflect.TypeFor[protocol.ErrorObject]())
	if err != nil {
		return nil, err
	}
	var out []schemaSet
	for _, c := range commandSchemas {
		id := schemaIDBase + strings.ReplaceAll(c.Command, " ", "-")
		set := schemaSet{Command: c.Command, Tool: c.Tool, Description: c.Description}
		if c.Request != nil {
			s, err := schemaCatalog.For(c.Request)
			if err != nil {
				return nil, err
			}
			set.Request = schema.Document(s, id+"/request", "procmon "+c.Command+" request",
				`The object inside {"request": ...} on stdin (for an MCP tool: its arguments). `+c.Description)
		}
		var resp schema.Schema
		if c.Response != nil {
			if resp, err = schemaCatalog.For(c.Response); err != nil {
				return nil, err
			}
		} else {
			var anyOf []any
			for _, t := range c.ResponseAnyOf {
				s, err := schemaCatalog.For(t)
				if err != nil {
					return nil, err
				}
				anyOf = append(anyOf, s)
			}
			resp = schema.Schema{"anyOf": anyOf}
		}
		set.Response = schema.Document(resp, id+"/response", "procmon "+c.Command+" response",
			"The one JSON object procmon "+c.Command+" writes on stdout when it answers (exit status 0, whatever the outcome).")
		set.Error = schema.Document(errSchema, id+"/error", "procmon "+c.Command+" error",
			"The one JSON object procmon "+c.Command+" writes on stdout when it fails, with a non-zero exit status; as an MCP tool error, the text of its content.")
		if c.Tool != "" {
			set.ToolInput, set.ToolOutput = toolSchemas(c, set)
		}
		out = append(out, set)
	}
	return out, nil
})

// findSchema returns the schemas of a command, named by command ("run
// new") or by agent tool ("start_process").
func findSchema(name string) (*schemaSet, error) {
	sets, err := schemaSets()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "derive schemas: %w", err)
	}
	var names, tools []string
	for i := range sets {
		if sets[i].Command == name || sets[i].Tool != "" && sets[i].Tool == name {
			return &sets[i], nil
		}
		names = append(names, sets[i].Command)
		if sets[i].Tool != "" {
			tools = append(tools, sets[i].Tool)
		}
	}
	return nil, protocol.Errorf(protocol.CodeInvalidRequest, "no command or tool %q; the commands are: %s; the tools: %s",
		name, strings.Join(names, ", "), strings.Join(tools, ", ")).With("field", "command")
}

func newSchemaCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "schema [COMMAND | TOOL]",
		Short: "Print the JSON Schemas of the requests, responses and errors",
		Long: `Print the JSON Schemas (draft 2020-12) of every command's request, response
and error, with descriptions for a model to read. With a command ("start",
"run new") or an agent tool ("start_process", "execute_command"), only its
schemas. They are derived from the types procmon decodes and encodes.

  procmon schema wait --pretty
  procmon schema execute_command | jq .request`,
		RunE: func(c *cobra.Command, args []string) error {
			var req schemaRequest
			if len(args) > 0 {
				req.Command = strings.Join(args, " ")
			} else if !env.StdinIsTerminal {
				if err := protocol.ReadRequest(env.Stdin, &req); err != nil && !emptyBody(err) {
					return err
				}
			}
			if req.Command != "" {
				set, err := findSchema(req.Command)
				if err != nil {
					return err
				}
				return respond(env, g, set)
			}
			sets, err := schemaSets()
			if err != nil {
				return protocol.Errorf(protocol.CodeInternal, "derive schemas: %w", err)
			}
			return respond(env, g, struct {
				Commands []schemaSet `json:"commands"`
			}{sets})
		},
	}
}

// toolSchemas derives a tool's input and output schemas from its
// command's request and response.
func toolSchemas(c commandSchema, set schemaSet) (in, out schema.Schema) {
	in, out = schema.Clone(set.Request), schema.Clone(set.Response)
	id := schemaIDBase + "tool/" + c.Tool
	in["$id"], out["$id"] = id+"/input", id+"/output"
	if c.Tool == "process_status" {
		in["required"] = []string{"monitor_id"}
		in["properties"].(map[string]any)["monitor_id"].(map[string]any)["type"] = "string"
		view := schema.Clone(out["anyOf"].([]any)[0].(map[string]any))
		out = schema.Document(view, id+"/output", "procmon process_status output", "One monitor's record and status.")
	}
	if c.Tool == "cancel_process" {
		// The tool cancels one monitor: its output is one receipt.
		view := schema.Clone(out["anyOf"].([]any)[0].(map[string]any))
		out = schema.Document(view, id+"/output", "procmon cancel_process output", "The monitor's terminal receipt.")
	}
	oneTypeEach(in)
	return in, out
}

// oneTypeEach gives each argument of a tool's input one JSON type. MCP
// clients that take arguments as text (the Inspector's CLI, form-based
// UIs) convert each by its declared type, and sent a union such as
// ["integer", "null"], or a oneOf with no type, as a string, which the
// tool refused: no timeout and no wait condition could be given. An
// optional argument left out means what its null means, and the tool still
// takes null, so only the union's other type is declared.
func oneTypeEach(in schema.Schema) {
	props, _ := in["properties"].(map[string]any)
	for _, p := range props {
		prop := p.(map[string]any)
		switch t := prop["type"].(type) {
		case []string:
			if len(t) == 2 && t[1] == "null" {
				prop["type"] = t[0]
			}
		case []any:
			if len(t) == 2 && t[1] == "null" {
				prop["type"] = t[0]
			}
		case nil:
			if types := branchTypes(prop["oneOf"]); len(types) == 1 {
				prop["type"] = types[0]
			}
		}
	}
}

// branchTypes returns the distinct types of a oneOf's branches, or nil if
// a branch has none.
func branchTypes(oneOf any) []string {
	branches, _ := oneOf.([]any)
	var types []string
	for _, b := range branches {
		t, ok := b.(map[string]any)["type"].(string)
		if !ok {
			return nil
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}
