package receiver

import (
	"bufio"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"google.golang.org/grpc/encoding"
	// Imported so that it registers its "gzip" before this package's init replaces it (a package
	// is initialised after those it imports; unrelated packages in the order of their paths).
	_ "google.golang.org/grpc/encoding/gzip"
)

// gzipCompressor is gRPC's "gzip" compression (OpenTelemetry Collectors compress their OTLP/gRPC
// exports with it by default) through github.com/klauspost/compress: behind a Collector, gRPC's own
// (compress/gzip reading the request a byte at a time through an interface) was a tenth of the
// listener's CPU. The request is read through a bufio.Reader, which klauspost's inflater reads
// without an interface call a byte. It replaces grpc/encoding/gzip's registration, by name.
type gzipCompressor struct {
	writers, readers sync.Pool
}

func init() { encoding.RegisterCompressor(&gzipCompressor{}) }

// Name is the compression's name on the wire.
func (*gzipCompressor) Name() string { return "gzip" }

// gzipWriter goes back to its pool when closed.
type gzipWriter struct {
	*gzip.Writer
	pool *sync.Pool
}

// Compress compresses what is written to the returned writer into w (a response, when the
// request came compressed).
func (c *gzipCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	z, ok := c.writers.Get().(*gzipWriter)
	if !ok {
		z = &gzipWriter{Writer: gzip.NewWriter(w), pool: &c.writers}
	}
	z.Reset(w)
	return z, nil
}

func (z *gzipWriter) Close() error {
	defer z.pool.Put(z)
	return z.Writer.Close()
}

// gzipReader goes back to its pool when gRPC closes it, at the message's end.
type gzipReader struct {
	*gzip.Reader
	buf  *bufio.Reader
	pool *sync.Pool
}

// Decompress returns a reader of r's decompressed bytes.
func (c *gzipCompressor) Decompress(r io.Reader) (io.Reader, error) {
	z, ok := c.readers.Get().(*gzipReader)
	if !ok {
		z = &gzipReader{Reader: new(gzip.Reader), buf: bufio.NewReaderSize(r, 32<<10), pool: &c.readers}
	}
	z.buf.Reset(r)
	if err := z.Reset(z.buf); err != nil {
		c.readers.Put(z)
		return nil, err
	}
	return z, nil
}

func (z *gzipReader) Close() error {
	defer z.pool.Put(z)
	return z.Reader.Close()
}
