// Package shaders holds the compute kernels of govram's containers (the
// Map's lookups and stores, the B-tree's lookups): GLSL sources (*.comp,
// with map.glsl, and internal/shaders' common.glsl) and the SPIR-V
// compiled from them (*.spv), committed and embedded by package
// collections, so that building govram needs no shader compiler. Each
// kernel sits beside the Go code it mirrors (the Map's hash, record
// layout and control bytes).
//
// After changing a kernel, regenerate with
//
//	go generate ./collections/internal/shaders
//
// which needs glslangValidator (Debian/Ubuntu: apt-get install glslang-tools).
// CI runs .ci/check-shaders.sh, which compiles the sources again and fails if
// the committed .spv files differ.
package shaders

//go:generate sh compile.sh .
