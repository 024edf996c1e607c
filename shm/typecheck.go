package shm

import (
	"fmt"
	"reflect"
)

// checkType refuses element types that cannot be shared between processes:
// anything holding a pointer (pointers, slices, strings, maps, channels,
// functions, interfaces), and zero-sized types.
func checkType[T any]() error {
	t := reflect.TypeFor[T]()
	if t.Size() == 0 {
		return fmt.Errorf("%w: %v has size 0", ErrType, t)
	}
	if path := pointerPath(t); path != "" {
		return fmt.Errorf("%w: %v holds a pointer (%s); shared-memory records must be pointer-free", ErrType, t, path)
	}
	return nil
}

// pointerPath returns a description of where t holds a pointer, or "".
func pointerPath(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	case reflect.Array:
		if p := pointerPath(t.Elem()); p != "" {
			return "[]" + p
		}
		return ""
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p := pointerPath(f.Type); p != "" {
				return "field " + f.Name + ": " + p
			}
		}
		return ""
	default:
		return t.Kind().String()
	}
}
