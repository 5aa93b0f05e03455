package otel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// metricsService is the receiver's OTLP metrics service: it keeps the latest value of every data
// point, keyed by host.name, metric name and attributes (seriesKey), and counts the points received.
type metricsService struct {
	collectormetrics.UnimplementedMetricsServiceServer
	mu       sync.Mutex
	points   map[string]float64
	received int64
	units    map[string]string
}

func (s *metricsService) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	s.record(req)
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

func (s *metricsService) record(req *collectormetrics.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.units == nil {
		s.units = map[string]string{}
	}
	for _, rm := range req.ResourceMetrics {
		host := ""
		for _, a := range rm.GetResource().GetAttributes() {
			if a.Key == "host.name" {
				host = a.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				s.units[m.Name] = m.Unit
				pts := m.GetGauge().GetDataPoints()
				if sum := m.GetSum(); sum != nil {
					pts = sum.DataPoints
				}
				for _, p := range pts {
					s.received++
					v := p.GetAsDouble()
					if _, ok := p.Value.(*metricspb.NumberDataPoint_AsInt); ok {
						v = float64(p.GetAsInt())
					}
					s.points[seriesKey(host, m.Name, attrPairs(p.Attributes)...)] = v
				}
			}
		}
	}
}

func attrPairs(kvs []*commonpb.KeyValue) []string {
	var out []string
	for _, kv := range kvs {
		v := kv.GetValue()
		var txt string
		switch v.Value.(type) {
		case *commonpb.AnyValue_IntValue:
			txt = fmt.Sprint(v.GetIntValue())
		default:
			txt = v.GetStringValue()
		}
		out = append(out, kv.Key+"="+txt)
	}
	return out
}

// seriesKey names one series: the host, the metric, and its attributes as sorted key=value pairs.
func seriesKey(host, name string, attrs ...string) string {
	attrs = slices.Clone(attrs)
	slices.Sort(attrs)
	return host + " " + name + "{" + strings.Join(attrs, ",") + "}"
}

func (s *metricsService) snapshot() (map[string]float64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64, len(s.points))
	for k, v := range s.points {
		out[k] = v
	}
	return out, s.received
}
