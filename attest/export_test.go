package attest

import "context"

// SignPayloadForTest lets the tests sign statements Sign would never build
// (another predicate type, a broken verdict) with a real key, to check that
// Verify refuses them for the right reason even when the signature is good.
func (s *Signer) SignPayloadForTest(ctx context.Context, payloadType string, payload []byte) (*Signed, error) {
	return s.signPayload(ctx, payloadType, payload)
}
