package telemetry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (the
// exporter's must end with Stop).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
