package timeline

import (
	"testing"
	"time"
)

func TestPace(t *testing.T) {
	wall := time.Unix(1000, 0)
	tests := []struct {
		name  string
		p     Pace
		after time.Duration
		want  int64
	}{
		{"real time", Pace{Wall: wall, At: 5e9, Speed: 1}, 2 * time.Second, 7e9},
		{"a twentieth", Pace{Wall: wall, At: 0, Speed: 0.05}, time.Second, 50e6},
		{"twice", Pace{Wall: wall, At: 1e6, Speed: 2}, time.Millisecond, 3e6},
		{"before the anchor", Pace{Wall: wall, At: 1e9, Speed: 1}, -time.Second, 0},
		{"standing still", Pace{Wall: wall, At: 42, Speed: 0}, time.Hour, 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Position(wall.Add(tt.after)); got != tt.want {
				t.Errorf("position %v after: %d; want %d", tt.after, got, tt.want)
			}
			if tt.p.Speed > 0 {
				if got := tt.p.WallAt(tt.want); !got.Equal(wall.Add(tt.after)) {
					t.Errorf("WallAt(%d) = %v; want %v", tt.want, got, wall.Add(tt.after))
				}
			}
		})
	}
}
