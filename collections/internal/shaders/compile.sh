#!/bin/sh
# compile.sh [outdir]: compiles the containers' kernels (*.comp) of this
# directory to SPIR-V for Vulkan 1.2 (<name>.spv in outdir, default this
# directory), with internal/shaders' headers (common.glsl) on the include
# path. The output depends only on the sources and on glslangValidator's
# version, which CI pins (see internal/shaders/compile.sh).
set -eu
cd "$(dirname "$0")"
out=${1:-.}
mkdir -p "$out"
for src in *.comp; do
	glslangValidator --quiet -V --target-env vulkan1.2 -I../../../internal/shaders -o "$out/${src%.comp}.spv" "$src"
done
