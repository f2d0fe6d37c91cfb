module github.com/govram/govram

go 1.26.0

require github.com/goki/vulkan v1.0.8

require (
	github.com/google/btree v1.1.3
	golang.org/x/sys v0.50.0
)
