// Package shaders holds govram's compute kernels: GLSL sources (*.comp,
// with the shared *.glsl headers) and the SPIR-V compiled from them
// (*.spv), which is committed and embedded so that building govram needs
// no shader compiler.
//
// After changing a kernel, regenerate with
//
//	go generate ./internal/shaders
//
// which needs glslangValidator (Debian/Ubuntu: apt-get install glslang-tools).
// CI runs .ci/check-shaders.sh, which compiles the sources again and fails if
// the committed .spv files differ.
package shaders

import "embed"

//go:generate sh compile.sh .

// FS holds the compiled kernels, one <name>.spv per <name>.comp.
//
//go:embed *.spv
var FS embed.FS
