package recordings_test

import (
	"compress/gzip"
	"io"
	"testing"
)

func gunzip(b *testing.B, r io.Reader) []byte {
	gz, err := gzip.NewReader(r)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
