package transport

import (
	"reflect"
	"testing"

	"github.com/ringfire/ringfire/xdp"
)

// addSocket sums every counter of a socket's statistics: a field added to
// xdp.Stats and left out here would read 0 in every transport's Stats.
func TestAddSocketSumsEveryCounter(t *testing.T) {
	var one, sum xdp.Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	addSocket(&sum, one)
	addSocket(&sum, one)
	got := reflect.ValueOf(sum)
	for i := range got.NumField() {
		if want := 2 * uint64(i+1); got.Field(i).Uint() != want {
			t.Errorf("%s: %d after adding %d twice", got.Type().Field(i).Name, got.Field(i).Uint(), i+1)
		}
	}
}
