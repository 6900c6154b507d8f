package standin

import (
	"fmt"
	"testing"
)

// TestAuditIDIsTheCountAsAUUID: an Audit-Id is the answer's count laid out as a UUID, as it was
// with fmt, the count's top 16 bits first.
func TestAuditIDIsTheCountAsAUUID(t *testing.T) {
	s := New(Options{})
	for _, n := range []uint64{0, 1, 0xabcdef, 1<<48 - 1, 1 << 48, 1<<64 - 2} {
		s.audit.Store(n)
		want := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32((n+1)>>48), (n+1)&0xffffffffffff)
		if got := s.auditID(); got != want {
			t.Errorf("Audit-Id after %d answers: %s, want %s", n, got, want)
		}
	}
}
