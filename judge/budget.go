package judge

import "github.com/strictgrade/strictgrade/schema"

// The verdict's size budget.
//
// The controller refuses a verdict larger than schema.MaxSize, and the
// grade becomes an ERROR: a candidate that could make the verdict grow past
// it would turn its FAIL into a grader failure. So every part of a verdict
// the judge writes is bounded, and the bounds add up, for the largest task
// LoadCases accepts with every case failing with the longest reason, to
// verdictBudget, which leaves a fifth of schema.MaxSize free (checked when
// the package compiles, and measured by TestVerdictBudget):
//
//	MaxCases × (caseRecordBytes + maxCaseReasonBytes + caseOrderBytes) + skeletonBytes
//	= 4096 × (256 + 512 + 5) + 32768 = 3198976 bytes ≤ 4/5 × 4194304
//
// Sizes are of the JSON encoding schema.Marshal writes: clampText counts a
// reason's bytes as they will be encoded.
const (
	// MaxCases is the most cases a task may have; LoadCases (and so
	// task.Load) refuses more.
	MaxCases = 4096
	// maxIDLen is the longest case id checkID accepts (its characters are
	// ASCII and never escaped).
	maxIDLen = 64
	// maxCaseReasonBytes bounds one case's reason; it also keeps it within
	// the schema's 512 characters.
	maxCaseReasonBytes = 512
	// maxVerdictReasonBytes bounds the verdict's reason (the schema allows
	// 1024 characters).
	maxVerdictReasonBytes = 1024
	// caseRecordBytes bounds one case record without its reason text: the
	// longest id, outcome, decided_by, the reason's key and quotes,
	// duration, exit, exit code, punctuation and the comma after it.
	caseRecordBytes = 256
	// caseOrderBytes bounds one entry of case_order: at most four digits
	// (MaxCases-1) and a comma.
	caseOrderBytes = 5
	// skeletonBytes bounds everything else: what the controller's
	// skeleton holds (schema, run id, task with its URI, submission,
	// images, timings, controller, nonce, disclosure, each bounded by the
	// schema), the reason code, the verdict's reason, the tests hash and
	// the keys around them.
	skeletonBytes = 32 << 10
	// verdictBudget is the most a verdict the judge writes can take.
	verdictBudget = MaxCases*(caseRecordBytes+maxCaseReasonBytes+caseOrderBytes) + skeletonBytes
)

// The budget must leave a fifth of schema.MaxSize free: a negative value
// here does not compile.
const _ = uint(schema.MaxSize - schema.MaxSize/5 - verdictBudget)
