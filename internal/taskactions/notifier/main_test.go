package notifier_test

import (
	"os"
	"testing"

	"taskactions/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp)) }
