package nvml

import "os"

// DefaultLibrary is the NVML library looked for (XFER_NVML_LIB overrides it).
const DefaultLibrary = "libnvidia-ml.so.1"

// libraryPath resolves the NVML library to load: path, else XFER_NVML_LIB, else DefaultLibrary.
func libraryPath(path string) string {
	if path == "" {
		path = os.Getenv("XFER_NVML_LIB")
	}
	if path == "" {
		path = DefaultLibrary
	}
	return path
}
