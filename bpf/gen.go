package bpf

// steer_bpfel.go and steer_bpfel.o are generated from steer.c and committed;
// regenerate with `make generate` (clang, llvm-strip and linux/libbpf headers
// needed) and check with `make check-generate`.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -target bpfel -type flow_key steer steer.c -- -O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu
