package logs

// The masker, for mask_test.go: an external test, as it makes real task
// tokens with internal/auth, which imports internal/history, which
// imports this package.

type TestMasker struct{ m masker }

func (t *TestMasker) Mask(p []byte) []byte { return t.m.mask(p) }
func (t *TestMasker) Flush() []byte        { return t.m.flush() }

const MaxHeld = maxHeld
