package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait of an hour on a canceled context: %v, want context.Canceled", err)
	}
	if err := For(context.Background(), 0); err != nil {
		t.Errorf("a wait of nothing: %v", err)
	}
}
