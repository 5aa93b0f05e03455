package receiver

import (
	"context"
	"net/http"
	"testing"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A sender's metrics are taken behind the token, over gRPC and HTTP, and discarded: no events come
// of them, and a request without the token is refused as a span request would be.
func TestMetricsTakenAndDiscarded(t *testing.T) {
	sink := &collect{}
	l, logs := listen(t, Config{Token: "s3cret"}, sink)
	cc, err := grpc.NewClient(l.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := collectormetrics.NewMetricsServiceClient(cc)
	req := &collectormetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: resource("s", 0),
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "xfertop.link.io",
			Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 7}}}}}}}}}}}}
	ctx := context.Background()
	if _, err := client.Export(ctx, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC metrics without a token: %v; want Unauthenticated", err)
	}
	if _, err := client.Export(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret"), req); err != nil {
		t.Errorf("gRPC metrics with the token: %v", err)
	}
	url := "http://" + l.HTTPAddr().String() + "/v1/metrics"
	body := marshal(t, req)
	if resp := post(t, http.DefaultClient, url, body, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HTTP metrics without a token: %s; want 401", resp.Status)
	}
	if resp := post(t, http.DefaultClient, url, body, map[string]string{"Authorization": "Bearer s3cret"}); resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP metrics with the token: %s", resp.Status)
	}
	_ = l.Close(context.Background())
	if tot := l.Totals(); tot.Rejected != 2 || tot.Events != 0 || len(sink.evs) != 0 || !logs.has("refused a metrics request") {
		t.Errorf("totals %+v, %d events, logs %v; want 2 rejected, no events, a log line", tot, len(sink.evs), logs.lines)
	}
}
