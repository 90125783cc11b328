package attest_test

import (
	"testing"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/schema"
)

// BenchmarkValidateSignVerify measures what the controller and a verifier
// spend on one verdict: validate the judge's JSON, sign it (schema.Marshal
// validates again, then statement, DSSE, bundle), and verify the bundle
// (signature, statement, re-validation of the verdict). Target: < 1 ms.
func BenchmarkValidateSignVerify(b *testing.B) {
	verdictJSON, err := schema.Marshal(verdictFor(submissionA, nonce1))
	if err != nil {
		b.Fatal(err)
	}
	want := expectA()
	for _, kt := range keyTypes {
		b.Run(string(kt), func(b *testing.B) {
			s := newSigner(b, kt)
			b.ReportAllocs()
			for b.Loop() {
				v, err := schema.Validate(verdictJSON)
				if err != nil {
					b.Fatal(err)
				}
				signed, err := s.Sign(b.Context(), v, attest.SignOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := attest.Verify(signed.Bundle, s.PublicKey(), want); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, kt := range keyTypes {
		b.Run(string(kt), func(b *testing.B) {
			s := newSigner(b, kt)
			signed, err := s.Sign(b.Context(), verdictFor(submissionA, nonce1), attest.SignOptions{})
			if err != nil {
				b.Fatal(err)
			}
			want := expectA()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := attest.Verify(signed.Bundle, s.PublicKey(), want); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
