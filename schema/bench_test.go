package schema_test

import (
	"os"
	"testing"

	"github.com/strictgrade/strictgrade/schema"
)

func BenchmarkValidate(b *testing.B) {
	data, err := os.ReadFile("testdata/valid/compat-final-flipped.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := schema.Validate(data); err != nil {
			b.Fatal(err)
		}
	}
}
