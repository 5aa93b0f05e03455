// Package topology reads and writes topology files: declarative YAML descriptions of a cluster
// (hosts, GPUs per host and their model, NVSwitch, NVLink mesh or PCIe only, NVLink SHARP, NICs,
// PCIe) together with the calibration the simulator runs with. The built-in topologies are such
// files embedded in the binary; a file may start from one of them with `base: NAME` and change only
// what differs. Malformed files are reported with the file and line of the problem.
package topology
