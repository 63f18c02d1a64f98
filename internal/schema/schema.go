// Package schema derives JSON Schemas (draft 2020-12) from the Go types
// that procmon encodes and decodes, so a schema can never say other than
// what the wire carries. What a type cannot say (what a field means, its
// units, when it is null, which values it takes) comes from a Catalog of
// descriptions; a field without one is an error, not a silent gap. It
// never reads or writes anything but the schemas.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Draft is the JSON Schema dialect of every schema here.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Schema is one JSON Schema object.
type Schema = map[string]any

// Catalog says what the types cannot.
type Catalog struct {
	// Fields describes fields by JSON name, everywhere they appear, unless
	// TypeFields names the field of that type.
	Fields map[string]string
	// TypeFields describes "TypeName.field", for a field whose meaning
	// depends on the type holding it.
	TypeFields map[string]string
	// Enums lists the values of a field, by "TypeName.field" or by JSON
	// name.
	Enums map[string][]string
	// Override replaces the derived schema of a field, by "TypeName.field"
	// or by JSON name (a json.RawMessage, say, whose shape the type does
	// not show). Its description is still the catalog's.
	Override map[string]Schema
}

// For derives the schema of t. Every object is closed
// (additionalProperties false); a field is required unless its tag says
// omitempty or it is promoted from an embedded pointer (nil leaves it
// out); a pointer field may be null. It reports every field the catalog
// does not describe.
func (c *Catalog) For(t reflect.Type) (Schema, error) {
	var missing []string
	s := c.typeSchema(t, &missing)
	if len(missing) > 0 {
		sort.Strings(missing)
		return s, fmt.Errorf("no description for %s", strings.Join(dedupe(missing), ", "))
	}
	return s, nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func (c *Catalog) typeSchema(t reflect.Type, missing *[]string) Schema {
	if t == rawMessage || t.Kind() == reflect.Interface {
		return Schema{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := c.typeSchema(t.Elem(), missing)
		return nullable(s)
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Schema{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Schema{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}
	case reflect.Slice, reflect.Array:
		return Schema{"type": "array", "items": c.typeSchema(t.Elem(), missing)}
	case reflect.Map:
		return Schema{"type": "object", "additionalProperties": c.typeSchema(t.Elem(), missing)}
	case reflect.Struct:
		found := map[string]field{}
		c.fields(t, t.Name(), found, 0, false, missing)
		props := Schema{}
		var required []string
		for name, f := range found {
			props[name] = f.schema
			if f.required {
				required = append(required, name)
			}
		}
		sort.Strings(required)
		s := Schema{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	panic(fmt.Sprintf("schema: no JSON form for %v", t))
}

// field is one JSON field of a struct, found depth embeddings down.
type field struct {
	schema   Schema
	required bool
	depth    int
}

// fields adds t's JSON fields to found, promoting those of embedded
// structs as encoding/json does: of two fields with one name, the
// shallower is encoded.
//
// A field is looked up in the catalog as "Outer.field" (outer is the
// struct being described, which may have promoted it), then as
// "Type.field" (the struct declaring it), then by its JSON name.
func (c *Catalog) fields(t reflect.Type, outer string, found map[string]field, depth int, viaPointer bool, missing *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et, ptr := f.Type, false
			if et.Kind() == reflect.Pointer {
				et, ptr = et.Elem(), true
			}
			if et.Kind() == reflect.Struct {
				c.fields(et, outer, found, depth+1, viaPointer || ptr, missing)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys := []string{outer + "." + name, t.Name() + "." + name, name}
		var s Schema
		if o, ok := lookup(c.Override, keys); ok {
			s = Clone(o)
		} else {
			s = c.typeSchema(f.Type, missing)
		}
		if values, ok := lookup(c.Enums, keys); ok {
			target := s
			if items, ok := s["items"].(Schema); ok {
				target = items
			}
			target["enum"] = values
		}
		desc, _ := lookup(c.TypeFields, keys[:2])
		if desc == "" {
			desc = c.Fields[name]
		}
		if desc == "" {
			*missing = append(*missing, keys[1])
		}
		s["description"] = desc
		if prev, ok := found[name]; ok && prev.depth <= depth {
			continue
		}
		found[name] = field{schema: s, required: !strings.Contains(opts, "omitempty") && !viaPointer, depth: depth}
	}
}

// lookup returns the entry of the first key m has.
func lookup[V any](m map[string]V, keys []string) (V, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// nullable lets s be null as well.
func nullable(s Schema) Schema {
	switch typ := s["type"].(type) {
	case string:
		s["type"] = []string{typ, "null"}
	case nil:
		// Any value already, null included.
	}
	return s
}

// Clone copies a schema deeply: setting a key on the copy (a
// description, an enum) never reaches the original.
func Clone(s Schema) Schema {
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var out Schema
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Document makes s a standalone schema document.
func Document(s Schema, id, title, description string) Schema {
	out := Schema{"$schema": Draft, "$id": id, "title": title, "description": description}
	for k, v := range s {
		out[k] = v
	}
	return out
}
