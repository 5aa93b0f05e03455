package analysis

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// CauseNs is idle time in ns by cause, indexed by Cause. It is a value, not a map, because a
// result holds one per stream and device (thousands at 512 devices, rebuilt each frame for every
// stream that ran); it encodes in JSON as an object keyed by the causes' report keys, in key
// order, exactly as a map[string]int64 of every cause would.
type CauseNs [causeCount]int64

// causeKeyOrder is the causes in the order of their report keys, as encoding/json sorts a map's.
var causeKeyOrder = [causeCount]Cause{CauseBarrierWait, CauseEventWait, CauseHostWait, CauseKernelWait, CauseOther, CausePeerWait}

// Total returns the time summed over causes.
func (c *CauseNs) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// Map returns the times keyed by the causes' report keys, every cause present.
func (c *CauseNs) Map() map[string]int64 {
	m := make(map[string]int64, causeCount)
	for cause, v := range c {
		m[Cause(cause).String()] = v
	}
	return m
}

// MarshalJSON writes {"barrier_wait":…,"event_wait":…,…}: every cause, keys in order.
func (c CauseNs) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 16*causeCount)
	for i, cause := range causeKeyOrder {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, cause.String())
		b = append(b, ':')
		b = strconv.AppendInt(b, c[cause], 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a cause missing from the object reads as 0.
func (c *CauseNs) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("idle time by cause: %w", err)
	}
	*c = CauseNs{}
	for k, v := range m {
		cause, ok := causeNamed(k)
		if !ok {
			return fmt.Errorf("idle time by cause: unknown cause %q", k)
		}
		c[cause] = v
	}
	return nil
}

// causeNamed returns the cause whose report key is name.
func causeNamed(name string) (Cause, bool) {
	for c, n := range causeNames {
		if n == name {
			return Cause(c), true
		}
	}
	return 0, false
}
