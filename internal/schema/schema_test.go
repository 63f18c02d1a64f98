package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Shared string `json:"shared"`
	Deep   int    `json:"deep"`
}

type outer struct {
	Shared   string            `json:"shared,omitempty"` // shadows inner's
	Maybe    *int64            `json:"maybe"`
	Optional []string          `json:"optional,omitempty"`
	Env      map[string]string `json:"env"`
	Skipped  string            `json:"-"`
	inner
	*extra
}

type extra struct {
	Extra bool `json:"extra"`
}

func catalog() *Catalog {
	return &Catalog{
		Fields:     map[string]string{"shared": "s", "deep": "d", "maybe": "m", "optional": "o", "env": "e", "extra": "x"},
		TypeFields: map[string]string{"outer.deep": "deep, as outer shows it"},
		Enums:      map[string][]string{"optional": {"a", "b"}},
	}
}

func TestForFollowsEncodingJSON(t *testing.T) {
	s, err := catalog().For(reflect.TypeFor[outer]())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(s)
	var got map[string]any
	json.Unmarshal(data, &got)
	props := got["properties"].(map[string]any)
	if len(props) != 6 {
		t.Errorf("properties %v, want shared, maybe, optional, env, deep, extra", props)
	}
	// The shallower "shared" (omitempty) wins; a field promoted through a
	// nil-able pointer is never required.
	if req := got["required"].([]any); len(req) != 3 || req[0] != "deep" || req[1] != "env" || req[2] != "maybe" {
		t.Errorf("required %v, want deep, env, maybe", req)
	}
	if typ := props["maybe"].(map[string]any)["type"]; !reflect.DeepEqual(typ, []any{"integer", "null"}) {
		t.Errorf("pointer field type %v", typ)
	}
	if d := props["deep"].(map[string]any)["description"]; d != "deep, as outer shows it" {
		t.Errorf("promoted field's description %q: the outer type's entry comes first", d)
	}
	if e := props["optional"].(map[string]any)["items"].(map[string]any)["enum"]; !reflect.DeepEqual(e, []any{"a", "b"}) {
		t.Errorf("enum of a list's items %v", e)
	}
	if got["additionalProperties"] != false {
		t.Error("objects must be closed")
	}
}

func TestForRefusesAnUndescribedField(t *testing.T) {
	c := catalog()
	delete(c.Fields, "extra")
	_, err := c.For(reflect.TypeFor[outer]())
	if err == nil || !strings.Contains(err.Error(), "extra.extra") {
		t.Fatalf("err %v, want one naming extra.extra", err)
	}
}
