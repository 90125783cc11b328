package schema_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strictgrade/strictgrade/schema"
)

// TestCaseReasonCode: version 3 gives a case that did not pass its own
// reason code (issue 29, item 8: a checker-rejected case had none, only
// the verdict said wrong_answer); a passed case has none, and versions 1
// and 2 stay as they were released.
func TestCaseReasonCode(t *testing.T) {
	data := readFile(t, "testdata/valid/strict-function-v3.json")
	v, err := schema.Validate(data)
	require.NoError(t, err)
	assert.Equal(t, schema.IDv3, v.Schema)
	assert.Equal(t, schema.ReasonWrongAnswer, v.Cases[1].ReasonCode)
	assert.Empty(t, v.Cases[0].ReasonCode)

	// Under version 2 the field does not exist.
	v2 := bytes.Replace(data, []byte(schema.IDv3), []byte(schema.IDv2), 1)
	_, err = schema.Validate(v2)
	require.ErrorIs(t, err, schema.ErrSchema)
	var ve *schema.ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Contains(t, err.Error(), "/cases/1")

	// A passed case has no reason code.
	v.Cases[0].ReasonCode = schema.ReasonWrongAnswer
	_, err = schema.Marshal(v)
	require.ErrorIs(t, err, schema.ErrInconsistent)
	assert.Contains(t, err.Error(), "/cases/0/reason_code")

	// The version-2 example still validates, as version 2.
	old, err := schema.Validate(readFile(t, "testdata/valid/strict-function-v2.json"))
	require.NoError(t, err)
	assert.Equal(t, schema.IDv2, old.Schema)
}

// TestCaseCPUTime: version 4 records a case's CPU time and the time limit
// a timeout met (issue 30); version 3 has neither field.
func TestCaseCPUTime(t *testing.T) {
	data := readFile(t, "testdata/valid/strict-function-v4.json")
	v, err := schema.Validate(data)
	require.NoError(t, err)
	assert.Equal(t, schema.ID, v.Schema)
	require.NotNil(t, v.Cases[2].CPUMS)
	assert.Equal(t, int64(2000), *v.Cases[2].CPUMS)
	assert.Equal(t, schema.LimitCPU, v.Cases[2].Limit)

	v3 := bytes.Replace(data, []byte(schema.ID), []byte(schema.IDv3), 1)
	_, err = schema.Validate(v3)
	require.ErrorIs(t, err, schema.ErrSchema)
	assert.Contains(t, err.Error(), "/cases/0")

	// A limit is cpu or wall.
	bad := bytes.Replace(data, []byte(`"limit": "cpu"`), []byte(`"limit": "idle"`), 1)
	_, err = schema.Validate(bad)
	require.ErrorIs(t, err, schema.ErrSchema)
	assert.Contains(t, err.Error(), "/cases/2/limit")
}
