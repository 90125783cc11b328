package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodeStrict decodes one JSON document into v refusing what
// encoding/json lets through: duplicate keys, trailing data, invalid UTF-8
// (parseJSON), and object keys that name a struct field in another case,
// or no field at all. It reads at most MaxFileSize bytes, and returns the
// generic form of the document too.
func decodeStrict(data []byte, v any) (any, error) {
	tree, err := parseJSONLimit(data, MaxFileSize)
	if err != nil {
		return nil, err
	}
	if err := checkFields(reflect.TypeOf(v), tree, "$"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, err
	}
	return tree, nil
}

// checkFields walks a generic JSON value along the Go type it will be
// decoded into and refuses object keys that are not exactly a field's JSON
// name. Type mismatches are left to the decoder.
func checkFields(t reflect.Type, v any, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field %s", path, quoteString(k))
			}
			if err := checkFields(ft, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range arr {
			if err := checkFields(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range sortedKeys(obj) {
			if err := checkFields(t.Elem(), obj[k], path+"["+quoteString(k)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's exported fields to their
// types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}
